-- prelude.lua: what the scripts of this folder share. Each script is sent after the
-- definitions of this file it uses (prelude.rs), so it shows only its own logic. Keep
-- the top level to comments, `local function` blocks closed by `end` at the start of a
-- line, and one-line `local` declarations (prelude.rs reads them). Its refusals are
-- parsed by refusal.rs.

-- Microseconds since the epoch, by the server's clock.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Milliseconds since the epoch, by the server's clock.
local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Refuses the call with an error reply whose first word says why (STALE, ORDER, ...).
local function refuse(reason)
  error(redis.error_reply(reason))
end

-- The board record's fields 'version', 'dropping', then `...` (so record[3] is the first
-- of `...`). Refuses with STALE when the record is missing, being dropped, or of another
-- version than `version`, the one the caller expects.
local function board_record(board, version, ...)
  local record = redis.call('HMGET', board, 'version', 'dropping', ...)
  if record[1] ~= version or record[2] then
    refuse('STALE board record missing, dropped or of another version')
  end
  return record
end

-- Whether a recompute's lease, ending at `until_ms` (a record's rb_until, or false),
-- still holds.
local function lease_held(until_ms)
  return until_ms ~= false and until_ms ~= nil and now_ms() < tonumber(until_ms)
end

-- `v`, an integer as a string, negated (as a string: Lua would print a large number in
-- floating-point notation, which HINCRBY and ZINCRBY refuse or round).
local function negate(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end


-- Ranks (read_ranking.lua, write.lua). A window's ranking holds the members of its
-- totals zset with a ranked total: positive ones, or with `nonzero` (a net-vote board)
-- every one (the totals never hold a zero), highest first, equal totals by member
-- ascending. A rank is 1 + the number of members with a strictly higher total
-- (competition), 1 + the number of distinct totals strictly higher (dense: ZCOUNT on the
-- window's distinct totals `dense`, see retally), or the 1-based ranking position
-- (`position`). Each is O(log N).

-- Whether `score` (a total, as Redis prints it) is ranked: `rule` is 'all' (a max
-- board: every value), true (every non-zero total) or false/nil (positive ones).
local function ranked_total(score, rule)
  if rule == 'all' then return true end
  if rule then return tonumber(score) ~= 0 end
  return tonumber(score) > 0
end

-- The rank of `score`, `greater` members having a strictly higher total, held by the
-- member at ranking position `at` (0-based; read only when `position`).
local function rank_of_total(dense, position, score, greater, at)
  if position then return at + 1 end
  if dense then return redis.call('ZCOUNT', dense, '(' .. score, '+inf') + 1 end
  return greater + 1
end

-- The 0-based ranking position in `totals` of `member`, whose total is `score`,
-- `greater` members having a strictly higher one: from its ZREVRANK, which orders equal
-- totals by member descending.
local function position_in(totals, member, score, greater)
  local tied = redis.call('ZCOUNT', totals, score, score)
  local revrank = redis.call('ZREVRANK', totals, member)
  return greater + (tied - 1 - (revrank - greater))
end

-- `member`'s total in `totals` (as Redis prints it; false without one) and its rank
-- (false when the total is not ranked), the board ranking as `rule` says (ranked_total).
local function member_rank(totals, dense, position, rule, member)
  local score = redis.call('ZSCORE', totals, member)
  if not score or not ranked_total(score, rule) then return score or false, false end
  local greater = redis.call('ZCOUNT', totals, '(' .. score, '+inf')
  return score, rank_of_total(dense, position, score, greater,
    position and position_in(totals, member, score, greater))
end

-- The standing of a write that answers it (write.lua, write_max.lua): appends to `into`,
-- for each of `members` and each window position j of `windows`, the member's total in
-- KEYS[totals + j] (0 without one) and its rank there (false when not ranked; dense: by
-- the distinct totals KEYS[dense + 2j] when `dense` is given), the board ranking as
-- `rule` says (ranked_total).
local function read_standing(into, members, windows, totals, dense, position, rule)
  for _, member in ipairs(members) do
    for _, j in ipairs(windows) do
      local distinct = dense and KEYS[dense + 2 * j] or nil
      local score, ranked = member_rank(KEYS[totals + j], distinct, position, rule, member)
      into[#into + 1] = tonumber(score) or 0
      into[#into + 1] = ranked
    end
  end
end

-- The standing part of a reply: per member and window, total and rank before, then
-- after (read_standing's `before` and `after`, in the same order).
local function standing_flat(before, after)
  local flat = {}
  for x = 1, #after, 2 do
    flat[#flat + 1] = before[x]
    flat[#flat + 1] = before[x + 1]
    flat[#flat + 1] = after[x]
    flat[#flat + 1] = after[x + 1]
  end
  return flat
end

-- Idempotency-key records (write.lua, trend_write.lua). A call under a client's key is
-- recorded, in the same call that applies its write, as one string set with PX = TTL:
--   '<fingerprint>[:<events>] <now> <deadline>[ <reply>...]'
-- <fingerprint>: what the write carried (40 hex digits); <events>: how many events the
-- call applied (absent: the whole call, as in trend_write.lua's records and in
-- write.lua's from before counts were kept); <now>: the caller's now and <deadline>:
-- now + TTL, unix ms; <reply>: numbers saying what the call answered (write.lua's only).
-- Every record written so far has this form (write.lua's '<fp>:<events> ...' and older
-- '<fp> ...', trend_write.lua's '<fp> <now> <deadline>'), and trend_write.lua still
-- writes no count, so processes of either version read each other's records.

-- The live record at `key` (its deadline after `now`, unix ms): nil when there is none
-- (or only one past its deadline, as good as absent: Redis deletes it at its PX), false
-- when it records another fingerprint, else {recorded now, events (-1 when not kept),
-- reply...}, as numbers.
local function key_record(key, fingerprint, now)
  local stored = redis.call('GET', key)
  if not stored then return nil end
  local parts = {}
  for part in string.gmatch(stored, '%S+') do parts[#parts + 1] = part end
  if tonumber(parts[3]) <= tonumber(now) then return nil end
  local recorded, events = string.match(parts[1], '^([^:]*):?(%d*)$')
  if recorded ~= fingerprint then return false end
  -- The replay's caller may wait for replicas, and WAIT counts the writes of its own
  -- connection: the record's expiry written again, unchanged (time stands still in a
  -- script), replicates after the first call's writes, so the wait covers them.
  local ttl = redis.call('PTTL', key)
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  local found = { tonumber(parts[2]), tonumber(events) or -1 }
  for x = 4, #parts do found[#found + 1] = tonumber(parts[x]) end
  return found
end

-- Records a call under `key` (see above): `events` may be nil (no count), `reply` nil or
-- a list; `now`, `deadline` and `ttl_ms` as the caller sent them.
local function set_key_record(key, fingerprint, events, now, deadline, ttl_ms, reply)
  local value = fingerprint .. (events and (':' .. events) or '') .. ' ' .. now .. ' ' .. deadline
  if reply and #reply > 0 then value = value .. ' ' .. table.concat(reply, ' ') end
  redis.call('SET', key, value, 'PX', ttl_ms)
end

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

-- Adds `delta` (an integer string) to `member`'s total in the zset `totals`, removing it
-- at exactly 0 (and, when `data` is given, the largest window's totals being `totals`,
-- its member data, data_{b}: data lives as long as that total), and, when `tally` is
-- given (a dense board), retallies.
local function add_total(totals, member, delta, tally, dense, data)
  local new = redis.call('ZINCRBY', totals, delta, member)
  if new == '0' then
    redis.call('ZREM', totals, member)
    if data then redis.call('HDEL', data, member) end
  end
  if tally then
    retally(tally, dense, tonumber(new) - tonumber(delta), new)
  end
end

-- Adds sign * values[x] to fields[x] in the hash or zset `key`, in bulk (one HMGET or
-- ZMSCORE, one HSET or ZADD, one HDEL or ZREM), deleting what reaches exactly 0 (and,
-- when `data` is given, `key` being the largest window's totals, the member data of what
-- reached 0, one HDEL on data_{b}), and on a zset with `tally` given (a dense board)
-- retallying; returns how many reached 0. Values are integers below 2^53, so Lua's
-- doubles compute them exactly.
local function bulk_add(key, is_zset, sign, fields, values, tally, dense, data)
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

-- Fields and values (as numbers) of a flat HSCAN or HGETALL reply; a field HSCAN
-- returned twice is taken once.
local function fields_and_values(flat)
  local fields, values, seen = {}, {}, {}
  for p = 1, #flat, 2 do
    local field = flat[p]
    if not seen[field] then
      seen[field] = true
      fields[#fields + 1] = field
      values[#values + 1] = tonumber(flat[p + 1])
    end
  end
  return fields, values
end

-- Hands the whole hash `from`, whose `fields` and `values` the caller read, on to the
-- hash `to`: one RENAME when `to` does not exist, else added into it and `from`
-- deleted; with `to` nil, `from` is just deleted.
local function hand_on(from, to, fields, values)
  if to and redis.call('EXISTS', to) == 0 then
    redis.call('RENAME', from, to)
  else
    if to then bulk_add(to, false, 1, fields, values) end
    redis.call('DEL', from)
  end
end

-- Compact slots (docs/compact-slots.md, "Compact slots"). A slot with a geometry, field <ts> of
-- slotgeo_{b} = "<L> <p> <count>", keeps each stage S as small hashes, the buckets
-- S:<i> for i < 2^L + p (linear hashing); a slot without one keeps each stage as one
-- hash. A member's bucket depends on its hash and the slot's geometry only, so bucket i
-- of stage k maps to bucket i of stage k+1. Scripts name bucket keys from a stage key
-- passed in KEYS: same hash tag, so same node on a Cluster.

-- A geometry field's value as {L, p, count, to_plain}; nil for none (false, a plain
-- slot). A 4th token 'P' ("L p count P") marks a slot being converted to plain by an
-- active relayout (relayout_chunk.lua): its writes go to the plain stage hashes, and
-- each stage's content is its plain hash plus its buckets until no bucket is left.
local function parse_geometry(text)
  if not text then return nil end
  local l, p, count, flag = string.match(text, '^(%d+) (%d+) (%d+) ?(P?)$')
  return { L = tonumber(l), p = tonumber(p), count = tonumber(count), to_plain = flag == 'P' }
end

-- A geometry as its field's value (the inverse of parse_geometry).
local function geometry_text(g)
  return string.format('%d %d %d', g.L, g.p, g.count) .. (g.to_plain and ' P' or '')
end

-- The geometry of slot `ts` (a string) as {L, p, count}, or nil for a plain slot.
local function slot_geometry(geo_key, ts)
  return parse_geometry(redis.call('HGET', geo_key, ts))
end

-- A member's hash: the first 32 bits of its SHA-1, as an integer.
local function member_hash(member)
  return tonumber(string.sub(redis.sha1hex(member), 1, 8), 16)
end

-- The bucket of hash `h` in geometry `geo`.
local function bucket_of(geo, h)
  local size = 2 ^ geo.L
  local b = h % size
  if b < geo.p then b = h % (2 * size) end
  return b
end

-- How many buckets a geometry has.
local function bucket_count(geo)
  return 2 ^ geo.L + geo.p
end

-- A new geometry with as many buckets as `fields` fields fill at `fill` per bucket (at
-- least one), counting `count` fields.
local function sized_geometry(fields, fill, count)
  local g = { L = 0, p = 0, count = count, to_plain = false }
  local want = math.floor(fields / fill)
  if want >= 2 then
    while 2 ^ (g.L + 1) <= want do g.L = g.L + 1 end
    g.p = want - 2 ^ g.L
  end
  return g
end

-- The key of bucket `i` of the stage `stage_key`: `<stage_key>:<i>`, `i` in decimal as
-- string.format('%d', i) writes it. Below 10^6 the digits come from two constant
-- tables, built on first use, and the key is made by one concatenation: Lua formats a
-- number with sprintf, and each string it makes is a new one to hash, allocate and
-- collect, which together cost about as much as the HINCRBY on the bucket
-- (docs/compact-slots.md, "Compact slots").
local decimal_digits, decimal_pairs
local function bucket_key(stage_key, i)
  if i >= 1000000 then return stage_key .. ':' .. string.format('%d', i) end
  if not decimal_digits then
    -- 0..99 unpadded, and 00..99.
    decimal_digits = {
      '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12', '13', '14',
      '15', '16', '17', '18', '19', '20', '21', '22', '23', '24', '25', '26', '27', '28',
      '29', '30', '31', '32', '33', '34', '35', '36', '37', '38', '39', '40', '41', '42',
      '43', '44', '45', '46', '47', '48', '49', '50', '51', '52', '53', '54', '55', '56',
      '57', '58', '59', '60', '61', '62', '63', '64', '65', '66', '67', '68', '69', '70',
      '71', '72', '73', '74', '75', '76', '77', '78', '79', '80', '81', '82', '83', '84',
      '85', '86', '87', '88', '89', '90', '91', '92', '93', '94', '95', '96', '97', '98',
      '99'
    }
    decimal_pairs = {
      '00', '01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12', '13',
      '14', '15', '16', '17', '18', '19', '20', '21', '22', '23', '24', '25', '26', '27',
      '28', '29', '30', '31', '32', '33', '34', '35', '36', '37', '38', '39', '40', '41',
      '42', '43', '44', '45', '46', '47', '48', '49', '50', '51', '52', '53', '54', '55',
      '56', '57', '58', '59', '60', '61', '62', '63', '64', '65', '66', '67', '68', '69',
      '70', '71', '72', '73', '74', '75', '76', '77', '78', '79', '80', '81', '82', '83',
      '84', '85', '86', '87', '88', '89', '90', '91', '92', '93', '94', '95', '96', '97',
      '98', '99'
    }
  end
  if i < 100 then return stage_key .. ':' .. decimal_digits[i + 1] end
  local low = i % 100
  local high = (i - low) / 100
  if high < 100 then
    return stage_key .. ':' .. decimal_digits[high + 1] .. decimal_pairs[low + 1]
  end
  local middle = high % 100
  return stage_key .. ':' .. decimal_digits[(high - middle) / 100 + 1]
    .. decimal_pairs[middle + 1] .. decimal_pairs[low + 1]
end

-- The freeze of a write (write.lua, write_plain.lua): each window j whose cutoff at the
-- caller's now (ARGV[cutoffs + j]) passed its watermark (the board record's field
-- fields[at + j], wm:<W>, read as record[at + j]) gets the cutoff as its watermark, so
-- an event for a slot that left the window skips it even before retirement runs.
-- Returns the stage of each of the call's m slots (slot i starting at ARGV[starts + i]):
-- the number of windows that froze it (a prefix, since watermarks never increase with
-- the window; n: too late).
local function write_stages(board, fields, record, at, cutoffs, starts, n, m)
  local watermark = {}
  for j = 1, n do
    local wm, cutoff = tonumber(record[at + j]), tonumber(ARGV[cutoffs + j])
    if cutoff > wm then
      redis.call('HSET', board, fields[at + j], ARGV[cutoffs + j])
      wm = cutoff
    end
    watermark[j] = wm
  end
  local stage = {}
  for i = 1, m do
    local s, k = tonumber(ARGV[starts + i]), 0
    for j = 1, n do
      if watermark[j] >= s then k = j end
    end
    stage[i] = k
  end
  return stage
end

-- `member`'s value in the stage `stage_key`: its plain hash plus, on a compact slot
-- (`bucket`, the member's bucket, else nil), that bucket; both forms may hold a value
-- while an active relayout converts the slot (docs/compact-slots.md, "Relayout").
local function stage_value(stage_key, bucket, member)
  local value = tonumber(redis.call('HGET', stage_key, member)) or 0
  if bucket then
    value = value + (tonumber(redis.call('HGET', bucket_key(stage_key, bucket), member)) or 0)
  end
  return value
end

-- The parts of a write (write.lua) that vary independently of one another: how a
-- window's totals are kept (dense tallies or not), whether a recompute is told, and the
-- form of each slot written (plain, compact, or being relaid out). Each factory runs
-- once per call and returns what the write's loop calls per entry, so the loop never
-- tests which variant it is in.

-- Dense tallies: a function adding `delta` (an integer string) to `member`'s total in
-- window j, KEYS[totals + j], and, when `dense` is given (a dense board: its tally and
-- distinct totals of window j are KEYS[dense + 2j - 1] and KEYS[dense + 2j]), to the
-- window's tally; a total of the largest window (j = n) that reaches 0 takes the
-- member's data in `data` (data_{b}) with it.
local function window_totals(totals, dense, n, data)
  if dense then
    return function(j, member, delta)
      add_total(KEYS[totals + j], member, delta, KEYS[dense + 2 * j - 1], KEYS[dense + 2 * j],
        j == n and data or nil)
    end
  end
  return function(j, member, delta)
    add_total(KEYS[totals + j], member, delta, nil, nil, j == n and data or nil)
  end
end

-- Recompute hooks: while a recompute of window `rebuilt` (its position; nil: none holds
-- its lease) runs, a function telling it about an entry of the slot starting at `start`
-- applied at stage k (its stage hash `stage_key`, on a compact slot its buckets' prefix),
-- when the entry counts in that window (k < rebuilt). In its scan phase (`scanning`) it
-- depends on how far the scan of that stage is (rebuild_scan_{b}, the scan's progress):
-- not started, nothing (the scan will read the value as it is then); scanned ('done'),
-- the delta goes to the build too (the scan read the value before it); part-scanned,
-- the member joins the log (whether the scan read it is unknown: its total will be
-- computed afresh by the fold). In its fold phase the delta goes to the build (`build`,
-- with `build_tally` and `build_dense` on a dense board) too, unless the member is still
-- in the log; if the member is the one being folded (`fold_member`) and the slot one its
-- fold has summed (up to `fold_slot`), the delta goes to the record's rb_fold_sum. nil
-- when no recompute runs, so a write pays nothing for it then.
local function recompute_hook(board, build, log, rebuilt, scanning, fold_member, fold_slot,
                              build_tally, build_dense)
  if not rebuilt then return nil end
  local progress = 'rebuild_scan_' .. string.sub(build, 9)
  return function(start, k, member, delta, stage_key)
    if k < rebuilt then
      if scanning then
        local reached = redis.call('HGET', progress, stage_key)
        if reached == 'done' then
          add_total(build, member, delta, build_tally, build_dense)
        elseif reached then
          redis.call('SADD', log, member)
        end
      elseif redis.call('SISMEMBER', log, member) == 0 then
        add_total(build, member, delta, build_tally, build_dense)
      elseif member == fold_member and tonumber(start) <= tonumber(fold_slot) then
        -- The member being folded, in a slot its fold has summed already.
        redis.call('HINCRBY', board, 'rb_fold_sum', delta)
      end
    end
  end
end

-- A slot a write creates during a recompute's scan (`build` the recompute's build,
-- `stage_keys` the slot's stage hashes the window counts): the scan listed the slots
-- before, so it never reads this one; its stages are marked scanned, and every write to
-- it goes to the build as it lands (a scan that had listed it finds it scanned).
local function recompute_new_slot(build, stage_keys)
  local progress = 'rebuild_scan_' .. string.sub(build, 9)
  for _, key in ipairs(stage_keys) do
    redis.call('HSET', progress, key, 'done')
  end
end

-- Compact slot splits made by one write call at most; the next call goes on.
local MAX_SPLITS = 32

-- Slot forms: the m distinct slots a write call touches, each plain, compact (a
-- geometry) or compact being relaid out as plain (a geometry marked 'P': written in the
-- plain stage hashes, never split, both forms read), behind functions that hide which.
-- Stage st of slot i is KEYS[stages + (i - 1) * n + st]; slot i starts at
-- ARGV[starts + i] and `stage[i]` windows froze it (n: too late, never touched). A slot
-- this call creates (not yet in the slot index `index`) that starts before `current`
-- (the open slot's start) gets a geometry when `layout` is 'compact', with as many
-- buckets as the newest older slot's count fills at `fill` fields a bucket (so a board
-- whose slots are alike seldom splits), else one; from `current` on it is plain. Returns
-- {geo = slot -> geometry or false, key, value, counted, save}:
--   key(i, st, member, h): the key holding `member`'s value in stage st of slot i (`h`:
--     the member's hash when the caller sent it);
--   value(i, st, member, h): that value, both forms summed (stage_value);
--   counted(i, value, delta): notes that an HINCRBY of `delta` answered `value` (a new
--     field when equal);
--   save(): stores the geometry of every compact slot the call changed, first splitting
--     stage 1 of those no window froze while they are over their fill (linear hashing:
--     bucket p splits into p and p + 2^L, at most MAX_SPLITS a call).
local function write_slots(geo_key, index, stages, n, m, starts, stage, layout, fill, current)
  local geo, fresh, grew = {}, {}, {}
  -- A fresh slot's geometry: the bucket count the newest older slot's count fills.
  local function sized_like_before(ts)
    local before = redis.call('ZREVRANGEBYSCORE', index, '(' .. ts, '-inf', 'LIMIT', 0, 1)[1]
    local prev = before and slot_geometry(geo_key, before)
    return sized_geometry(prev and prev.count or 0, fill, 0)
  end
  local stored = m > 0 and redis.call('HMGET', geo_key, unpack(ARGV, starts + 1, starts + m)) or {}
  for i = 1, m do
    geo[i], grew[i] = false, 0
    if stage[i] < n then
      local ts = ARGV[starts + i]
      local g = parse_geometry(stored[i])
      if not g and layout == 'compact' and tonumber(ts) < current
        and not redis.call('ZSCORE', index, ts) then
        g = sized_like_before(ts)
        fresh[i] = true
      end
      geo[i] = g or false
    end
  end

  local slots = { geo = geo }
  function slots.key(i, st, member, h)
    local key = KEYS[stages + (i - 1) * n + st]
    if not geo[i] or geo[i].to_plain then return key end
    return bucket_key(key, bucket_of(geo[i], h or member_hash(member)))
  end
  function slots.value(i, st, member, h)
    local bucket = geo[i] and bucket_of(geo[i], h or member_hash(member))
    return stage_value(KEYS[stages + (i - 1) * n + st], bucket, member)
  end
  function slots.counted(i, value, delta)
    if geo[i] and value == tonumber(delta) then grew[i] = grew[i] + 1 end
  end
  -- Splits bucket p of stage 1 of slot i.
  local function split(i)
    local g, stage_key = geo[i], KEYS[stages + (i - 1) * n + 1]
    local size = 2 ^ g.L
    local from, to = bucket_key(stage_key, g.p), bucket_key(stage_key, g.p + size)
    local all = redis.call('HGETALL', from)
    local moved, gone = {}, {}
    for x = 1, #all, 2 do
      if member_hash(all[x]) % (2 * size) ~= g.p then
        moved[#moved + 1], moved[#moved + 2] = all[x], all[x + 1]
        gone[#gone + 1] = all[x]
      end
    end
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      redis.call('HDEL', from, unpack(gone))
    end
    g.p = g.p + 1
    if g.p == size then g.L, g.p = g.L + 1, 0 end
  end
  function slots.save()
    for i = 1, m do
      local g = geo[i]
      if g and (fresh[i] or grew[i] > 0) then
        g.count = g.count + grew[i]
        local splits = 0
        while stage[i] == 0 and not g.to_plain and splits < MAX_SPLITS
          and g.count > fill * bucket_count(g) do
          split(i)
          splits = splits + 1
        end
        redis.call('HSET', geo_key, ARGV[starts + i], geometry_text(g))
      end
    end
  end
  return slots
end

-- Peak lists (write_max.lua, retire_max.lua; docs/design.md, "Max and min boards"). A
-- max board keeps, per member, the pairs '<slot>:<value>' of its live slots that no
-- newer slot matches, comma-separated: slots ascending, values strictly descending.
-- The member's value in a window whose cutoff is c is then the first pair past c.
-- Slots and values are integers below 2^53, so Lua's doubles compare them exactly.

-- The list `list` (false: none) with the pair (`slot`, `value`) (integer strings)
-- added, or nil when it adds nothing (a pair of that slot or a newer one holds as much).
local function peaks_add(list, slot, value)
  if not list then return slot .. ':' .. value end
  local s, v = tonumber(slot), tonumber(value)
  local out, placed = {}, false
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    local a = tonumber(ps)
    if a < s then
      if tonumber(pv) > v then out[#out + 1] = ps .. ':' .. pv end
    else
      if not placed then
        if tonumber(pv) >= v then return nil end
        out[#out + 1] = slot .. ':' .. value
        placed = true
      end
      if a > s then out[#out + 1] = ps .. ':' .. pv end
    end
  end
  if not placed then out[#out + 1] = slot .. ':' .. value end
  return table.concat(out, ',')
end

-- The value of the first pair of `list` (false: none) past slot `cutoff` (a number),
-- as a string; false when there is none.
local function peaks_after(list, cutoff)
  if not list then return false end
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    if tonumber(ps) > cutoff then return pv end
  end
  return false
end

-- The pairs of `list` (false: none) past slot `through` (a number); '' when none.
local function peaks_trim(list, through)
  if not list then return '' end
  local out = {}
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    if tonumber(ps) > through then out[#out + 1] = ps .. ':' .. pv end
  end
  return table.concat(out, ',')
end

-- A max, min or latest board's slot in its two forms (docs/design.md, "Compact slots of
-- max, min and latest boards"): the plain hash `slot_key` and, once the retirer gave the
-- slot a geometry (compact_max.lua), its buckets `<slot_key>:<i>`. A field only ever
-- moves from the plain hash into a bucket.

-- The better of two values a slot holds for a member (false/nil: none): the higher (a
-- max board), or the newer '<at>:<value>', of two at one ms the greater (a latest board).
local function better_held(a, b, latest)
  if not a then return b end
  if not b then return a end
  if not latest then
    if tonumber(a) >= tonumber(b) then return a end
    return b
  end
  local ta, va = string.match(a, '^(%-?%d+):(%-?%d+)$')
  local tb, vb = string.match(b, '^(%-?%d+):(%-?%d+)$')
  ta, va, tb, vb = tonumber(ta), tonumber(va), tonumber(tb), tonumber(vb)
  if ta > tb or (ta == tb and va >= vb) then return a end
  return b
end

-- The key that holds (or takes) `member`'s value in the slot `slot_key` of geometry
-- `geo` (nil: a plain slot).
local function held_key(slot_key, geo, member)
  if not geo then return slot_key end
  return bucket_key(slot_key, bucket_of(geo, member_hash(member)))
end

-- `member`'s value in the slot `slot_key` of geometry `geo`: the better of its two forms.
local function held_value(slot_key, geo, member, latest)
  local plain = redis.call('HGET', slot_key, member)
  if not geo then return plain end
  return better_held(plain, redis.call('HGET', held_key(slot_key, geo, member), member), latest)
end

-- One step of a scan of the slot `slot_key` (geometry `geo`, read by the caller in its
-- call) in both forms: the plain hash first, then each bucket, so a field the retirer
-- moves meanwhile is never missed. `cursor`: '0' (the start), 'p<n>' (the plain hash at
-- HSCAN cursor n) or 'b<i>:<n>' (bucket i). Steps on while the next bucket, at twice the
-- buckets' average, still fits in `count` fields (at least one bucket a step: a bucket is
-- one listpack, read whole). Returns the fields and values read (flat) and the next
-- cursor ('0': done).
local function slot_scan(slot_key, geo, cursor, count)
  local flat = {}
  local room = count
  if geo then room = count - 2 * math.max(1, math.floor(geo.count / bucket_count(geo))) end
  repeat
    local form, i, c = 'p', 0, '0'
    local b, n = string.match(cursor, '^b(%d+):(%d+)$')
    if b then
      form, i, c = 'b', tonumber(b), n
    elseif cursor ~= '0' then
      c = string.match(cursor, '^p(%d+)$')
    end
    local key = (form == 'p') and slot_key or bucket_key(slot_key, i)
    local step = redis.call('HSCAN', key, c, 'COUNT', count)
    for _, v in ipairs(step[2]) do flat[#flat + 1] = v end
    if step[1] ~= '0' then
      cursor = (form == 'p') and ('p' .. step[1]) or ('b' .. i .. ':' .. step[1])
    else
      local following = (form == 'p') and 0 or i + 1
      if geo and following < bucket_count(geo) then
        cursor = 'b' .. following .. ':0'
      else
        cursor = '0'
      end
    end
  until cursor == '0' or string.sub(cursor, 1, 1) ~= 'b' or #flat > 2 * room
  return flat, cursor
end

-- A step of a max, min or latest board's retirement or recompute: `member`'s value
-- (false: none) goes to the ZADD arguments `set`, or the member to the ZREM list `gone`.
local function set_or_gone(set, gone, member, value)
  if value then
    set[#set + 1] = value
    set[#set + 1] = member
  else
    gone[#gone + 1] = member
  end
end

-- Newest events (write_max.lua, retire_max.lua on a latest board; docs/design.md,
-- "Latest boards"). A latest board keeps, per member, its newest event as
-- '<slot>:<at>:<value>' (at in unix ms): of two events the later is the newer, of two at
-- the same millisecond the one of greater value. The member's value in a window whose
-- cutoff is c is that event's when its slot is past c (every older event is in an
-- older slot, so none is in a window that lacks the newest).

-- The record `record` (false: none) replaced by the event (`slot`, `value`, `at`)
-- (integer strings) when that is newer, else nil.
local function newest_add(record, slot, value, at)
  if record then
    local _, t, v = string.match(record, '^(%-?%d+):(%-?%d+):(%-?%d+)$')
    local a, b = tonumber(at), tonumber(t)
    if a < b or (a == b and tonumber(value) <= tonumber(v)) then return nil end
  end
  return slot .. ':' .. at .. ':' .. value
end

-- The value of `record` (false: none) when its slot is past `cutoff` (a number), as a
-- string; false otherwise.
local function newest_after(record, cutoff)
  if not record then return false end
  local s, _, v = string.match(record, '^(%-?%d+):(%-?%d+):(%-?%d+)$')
  if tonumber(s) > cutoff then return v end
  return false
end

-- `record` (false: none) when its slot is past `through` (a number), else ''.
local function newest_trim(record, through)
  if record and newest_after(record, through) then return record end
  return ''
end
