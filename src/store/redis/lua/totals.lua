-- totals.lua: adding to totals (one or in bulk) and the dense boards' tallies of them.

-- Dense boards: `tally` (hash, total -> how many members hold it) and `dense` (zset of
-- the distinct totals, member = score = the total) mirror a window's ranked totals.

-- One member more (`by` 1) or fewer (-1) holding `total` (a number).
local function tally_one(tally, dense, total, by)
  local t = string.format('%d', total)
  local count = redis.call('HINCRBY', tally, t, by)
  if by > 0 and count == 1 then
    redis.call('ZADD', dense, t, t)
  elseif by < 0 and count == 0 then
    redis.call('HDEL', tally, t)
    redis.call('ZREM', dense, t)
  end
end

-- Records that one member's total went from `old` to `new` (numbers or strings; absent
-- is 0): a total <= 0 is not ranked, so not tallied.
local function retally(tally, dense, old, new)
  old, new = tonumber(old) or 0, tonumber(new) or 0
  if old == new then return end
  if old > 0 then tally_one(tally, dense, old, -1) end
  if new > 0 then tally_one(tally, dense, new, 1) end
end

-- retally for a board ranking every value (max, min and latest boards, rank 'all'): `old`
-- and `new` are a member's values before and after (strings or numbers; nil or false:
-- it held none), each tallied whatever its sign.
local function retally_all(tally, dense, old, new)
  old, new = tonumber(old), tonumber(new)
  if old == new then return end
  if old then tally_one(tally, dense, old, -1) end
  if new then tally_one(tally, dense, new, 1) end
end

-- retally_all for a step of a max, min or latest board's retirement or recompute, before
-- it sets `set` (value, member, ..., in the order of `members`) in `totals` and removes
-- the rest of `members`: one ZMSCORE for the values before.
local function retally_step(tally, dense, totals, members, set)
  local old = redis.call('ZMSCORE', totals, unpack(members))
  local at = 1
  for i, member in ipairs(members) do
    local new = nil
    if set[at + 1] == member then
      new = set[at]
      at = at + 2
    end
    retally_all(tally, dense, old[i], new)
  end
end

-- Of a max, min or latest board's pairs `set` (value, member, ...) for a window's
-- `totals`, those of shown members; a hidden member's (see hidden_members) are set in
-- <totals>:hidden here (ZADD with `flag`, 'GT' or nil), never tallied. Also the shown
-- ones of `members` and of `gone` (members leaving the window: a hidden one leaves
-- <totals>:hidden here), when given. Returns set, members, gone and how many hidden
-- members left.
local function shown_values(totals, flag, set, members, gone)
  if not hidden_members then return set, members, gone, 0 end
  local all, listed = {}, {}
  local function list(member)
    if not listed[member] then
      listed[member] = true
      all[#all + 1] = member
    end
  end
  for x = 2, #set, 2 do list(set[x]) end
  for _, member in ipairs(gone or {}) do list(member) end
  if #all == 0 then return set, members, gone, 0 end
  local flags = redis.call('HMGET', hidden_members, unpack(all))
  local hid = {}
  for x, member in ipairs(all) do hid[member] = flags[x] end
  local function split(values, width)
    if not values then return nil, {} end
    local shown, hidden = {}, {}
    for x = 1, #values, width do
      local to = hid[values[x + width - 1]] and hidden or shown
      for y = x, x + width - 1 do to[#to + 1] = values[y] end
    end
    return shown, hidden
  end
  local shadow = totals .. ':hidden'
  local shown_set, hid_set = split(set, 2)
  if #hid_set > 0 then
    if flag then
      redis.call('ZADD', shadow, flag, unpack(hid_set))
    else
      redis.call('ZADD', shadow, unpack(hid_set))
    end
  end
  local shown_gone, hid_gone = split(gone, 1)
  local left = #hid_gone > 0 and redis.call('ZREM', shadow, unpack(hid_gone)) or 0
  local shown_members = split(members, 1)
  return shown_set, shown_members, shown_gone, left
end

-- Adds `delta` (an integer string) to `member`'s total in the zset `totals`, removing it
-- at exactly 0 (and, when `data` is given, the largest window's totals being `totals`,
-- its member data, data_{b}: data lives as long as that total), and, when `tally` is
-- given (a dense board), retallies.
local function add_to(totals, member, delta, tally, dense, data)
  local new = redis.call('ZINCRBY', totals, delta, member)
  if new == '0' then
    redis.call('ZREM', totals, member)
    if data then redis.call('HDEL', data, member) end
  end
  if tally then
    retally(tally, dense, tonumber(new) - tonumber(delta), new)
  end
end

-- add_to a window's totals: a hidden member's (see hidden_members) go to <totals>:hidden,
-- never tallied. A recompute's build, which holds every member, takes add_to.
local function add_total(totals, member, delta, tally, dense, data)
  if review_rank then gate_changed[member] = true end
  if hidden_members and redis.call('HEXISTS', hidden_members, member) == 1 then
    return add_to(totals .. ':hidden', member, delta, nil, nil, data)
  end
  add_to(totals, member, delta, tally, dense, data)
end

-- ZMSCORE of `members` in a window's `totals`, a hidden member's (see hidden_members)
-- from <totals>:hidden: what each member holds there, hidden or not.
local function held_scores(totals, members)
  local scores = redis.call('ZMSCORE', totals, unpack(members))
  if hidden_members then
    local hidden = redis.call('ZMSCORE', totals .. ':hidden', unpack(members))
    for i = 1, #members do scores[i] = scores[i] or hidden[i] end
  end
  return scores
end

-- After `totals` (a window's, with its tally and distinct totals on a dense board) was
-- rebuilt from the slots (a recompute's swap), every hidden member
-- (see hidden_members) has its exact total there: it goes to <totals>:hidden, replacing
-- what was kept there, and out of the tally (`all`: a max, min or latest board's, which
-- tallies every value).
local function hide_rebuilt(totals, tally, dense, all)
  if not hidden_members then return end
  local shadow = totals .. ':hidden'
  for _, member in ipairs(redis.call('HKEYS', hidden_members)) do
    local total = redis.call('ZSCORE', totals, member)
    if total then
      redis.call('ZREM', totals, member)
      redis.call('ZADD', shadow, total, member)
      if tally then (all and retally_all or retally)(tally, dense, total, nil) end
    else
      redis.call('ZREM', shadow, member)
    end
  end
end

-- Moves `member`'s total in each window, `keys` listing their totals, from the totals
-- to <totals>:hidden (`hide`) or back. On a dense board `tally(j)` answers window j's
-- tally and distinct totals, retallied by `tallied` (retally or retally_all); `tally`
-- 'beside' names those beside each window's totals (stats_{b}[_<W>] -> tally_{b}[_<W>],
-- dense_{b}[_<W>]), retallied by `tallied` (none: retally).
local function move_totals(keys, member, hide, tally, tallied)
  for j, totals in ipairs(keys) do
    local from, to = totals, totals .. ':hidden'
    if not hide then from, to = to, from end
    local total = redis.call('ZSCORE', from, member)
    if total then
      redis.call('ZREM', from, member)
      redis.call('ZADD', to, total, member)
      local counts, distinct = nil, nil
      if tally == 'beside' then
        local prefix, rest = string.match(totals, '^(.*)stats_({.*)$')
        counts, distinct = prefix .. 'tally_' .. rest, prefix .. 'dense_' .. rest
        tallied = tallied or retally
      elseif tally then
        counts, distinct = tally(j)
      end
      if counts then
        if hide then tallied(counts, distinct, total, nil) else tallied(counts, distinct, nil, total) end
      end
    end
  end
end

-- Adds sign * values[x] to fields[x] in the hash or zset `key`, in bulk (one HMGET or
-- ZMSCORE, one HSET or ZADD, one HDEL or ZREM), deleting what reaches exactly 0 (and,
-- when `data` is given, `key` being the largest window's totals, the member data of what
-- reached 0, one HDEL on data_{b}), and on a zset with `tally` given (a dense board)
-- retallying; returns how many reached 0. Values are integers below 2^53, so Lua's
-- doubles compute them exactly.
local function bulk_add_to(key, is_zset, sign, fields, values, tally, dense, data)
  local current = redis.call(is_zset and 'ZMSCORE' or 'HMGET', key, unpack(fields))
  local set, zero = {}, {}
  for x = 1, #fields do
    local value = (tonumber(current[x]) or 0) + sign * values[x]
    if is_zset and tally then retally(tally, dense, current[x], value) end
    if value == 0 then
      zero[#zero + 1] = fields[x]
    elseif is_zset then
      set[#set + 1] = string.format('%d', value)
      set[#set + 1] = fields[x]
    else
      set[#set + 1] = fields[x]
      set[#set + 1] = string.format('%d', value)
    end
  end
  if #set > 0 then redis.call(is_zset and 'ZADD' or 'HSET', key, unpack(set)) end
  if #zero > 0 then
    redis.call(is_zset and 'ZREM' or 'HDEL', key, unpack(zero))
    if data then redis.call('HDEL', data, unpack(zero)) end
  end
  return #zero
end

-- bulk_add_to, a hidden member's part of a window's totals (see hidden_members) going
-- to <key>:hidden (never tallied).
local function bulk_add(key, is_zset, sign, fields, values, tally, dense, data)
  if is_zset then gate_touched(fields) end
  if not (is_zset and hidden_members) then
    return bulk_add_to(key, is_zset, sign, fields, values, tally, dense, data)
  end
  local flags = redis.call('HMGET', hidden_members, unpack(fields))
  local shown, shown_values, hid, hid_values = {}, {}, {}, {}
  for x = 1, #fields do
    local to, to_values = shown, shown_values
    if flags[x] then to, to_values = hid, hid_values end
    to[#to + 1], to_values[#to_values + 1] = fields[x], values[x]
  end
  local zeroed = 0
  if #shown > 0 then
    zeroed = bulk_add_to(key, true, sign, shown, shown_values, tally, dense, data)
  end
  if #hid > 0 then
    zeroed = zeroed + bulk_add_to(key .. ':hidden', true, sign, hid, hid_values, nil, nil, data)
  end
  return zeroed
end

-- Fields and values (as numbers) of a flat HSCAN or HGETALL reply (of its entries
-- `from` to `to` when given); a field HSCAN returned twice, or already in `seen` (given
-- to share it between replies), is taken once.
local function fields_and_values(flat, seen, from, to)
  local fields, values = {}, {}
  seen = seen or {}
  for p = from or 1, to or #flat, 2 do
    local field = flat[p]
    if not seen[field] then
      seen[field] = true
      fields[#fields + 1] = field
      values[#values + 1] = tonumber(flat[p + 1])
    end
  end
  return fields, values
end

-- Hands the whole hash `from`, whose `fields` and `values` the caller read (or, when it
-- gives none, read here if needed), on to the hash `to`: one RENAMENX when `to` does not
-- exist (then answers true), else added into it and `from` deleted; with `to` nil,
-- `from` is just deleted.
local function hand_on(from, to, fields, values)
  if to and redis.call('RENAMENX', from, to) == 1 then return true end
  if to then
    if not fields then fields, values = fields_and_values(redis.call('HGETALL', from)) end
    bulk_add(to, false, 1, fields, values)
  end
  redis.call('DEL', from)
  return false
end
