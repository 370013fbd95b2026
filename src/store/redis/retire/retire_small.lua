-- retire_small.lua: retire small boards whole, every window, several in one bounded call.
--
-- ARGV[1] is how many boards the call retires; then, per board, how many keys and how many
-- arguments it has and its arguments, and its keys follow those of the board before it.
-- Each board's keys and arguments, as `retire` below sees them (its KEYS and ARGV):
--
-- KEYS[1]            board record            board_{b}
-- KEYS[2]            slot index              slots_{b}
-- KEYS[3]            slot geometries         slotgeo_{b} (compact slots, see prelude)
-- KEYS[3+j]          window j's totals       stats_{b} or stats_{b}_<W>     (j = 1..n)
-- KEYS[3+n+(c-1)n+j] candidate slot c's stage for window j: slot_{b}_<ts> (j = 1) or
--                    slot_{b}_<ts>_<j-1>                          (c = 1..m, j = 1..n);
--                    on a compact slot the prefix of its buckets <key>:<i>
-- KEYS[3+n+mn+k]     the closed slot's stage k (k = 1..n), named as above: the slot that
--                    just closed (the current slot's start - the slot length)
-- KEYS[4+2n+mn]      member data             data_{b}: retiring the largest window
--                    deletes the data of each member whose total it takes to 0
--
-- ARGV[1]            board version the caller expects
-- ARGV[2]            n, the board's windows
-- ARGV[3]            m, the candidate slots
-- ARGV[4]            most fields this call may handle (its bound)
-- ARGV[4+j]          window j, seconds (fields wm:<W>, done:<W>), smallest first
-- ARGV[4+n+j]        window j's cutoff: every slot at or before it has left window j
-- ARGV[4+2n+c]       candidate slot c's start
-- ARGV[5+2n+m]       the closed slot's start
-- ARGV[6+2n+m]       the minimum fields worth compacting ('' asks nothing, see below)
-- ARGV[7+2n+m]       the store's default layout, for a record that names none
--
-- Does, in one atomic call, what retire_begin.lua and retire_chunk.lua do window by
-- window, smallest first: moves each window's watermark up to its cutoff, subtracts from
-- its totals every slot in (done:<W>, cutoff] (members reaching exactly 0 removed), adds
-- it to the slot's next stage (which the next window subtracts, in this same call when it
-- is due too) and deletes it, marks the window retired through its cutoff, and drops from
-- the index the slots the largest window retired. The caller names the slots it expects
-- to be due (those that crossed a cutoff at the boundary), since every key is passed in.
-- A slot's geometry is read only when the record lacks plain_slots (create_board.lua sets
-- it; the first call that gives a slot a geometry deletes it, in the same atomic step).
-- Each stage hash (a compact slot's each bucket, as retire_chunk.lua does) is read whole,
-- subtracted, and handed on by one RENAMENX when the next stage has no such hash (merged
-- otherwise); a compact slot's geometry goes with its index entry. A compact slot of more
-- than MAX_BUCKETS buckets is not small.
--
-- It first checks, changing nothing, that the call fits: every slot due is a candidate,
-- and the fields to handle (each stage's size plus what the smaller window moves into it)
-- are at most ARGV[4]. Otherwise it answers {'fallback', reason} having done nothing, and
-- the caller retires the board window by window in chunks (a big board, a board behind by
-- more than one boundary, a recompute holding its lease). Exact and idempotent: a second
-- call, from any retirer, finds nothing due and changes nothing.
-- Compaction (docs/compact-slots.md, "Compact slots"): write.lua creates a compact board's open
-- slot plain, so, once it retired the board, the call also says whether the slot that
-- just closed should be compacted: the board's layout (its record's, else ARGV[7+2n+m])
-- is compact, the slot is live and has no geometry, and its largest stage has at least
-- ARGV[6+2n+m] fields (fewer fit one listpack anyway). The caller then converts it with
-- relayout_chunk.lua. Asking costs no extra round trip, and mostly no command: the sizes
-- of the stages this call measured or renamed into are known, and a later stage k holds
-- none of a slot that just closed unless window k-1 was frozen past it (by this call,
-- whose sizes are known, or before it: then measured), as writes and retirement put a
-- slot's fields in the stage of the smallest window not frozen past it.
-- A board's answer: {'done', (window, slot) pairs retired, fields subtracted, members
-- zeroed, compact (1: compact the closed slot, else 0)}, or {'fallback', reason}
-- ('stale': board missing, dropped or of another version; 'later': the call's bound was
-- spent on the boards before it, which left it unchanged). The call returns the boards'
-- answers in order. Its bound: it takes boards while the fields they handled stay within
-- the first board's ARGV[4] (the first board always runs, so every call makes progress,
-- and none handles more than about twice that bound). On a Cluster the boards of one call
-- share a hash slot.

local MAX_BUCKETS = 64

-- Retires one board (its KEYS and ARGV as the header says); also the fields it handled.
local function retire(KEYS, ARGV)
  local board, index, geo_key = KEYS[1], KEYS[2], KEYS[3]
  local n, m, max_fields = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  local function window(j) return ARGV[4 + j] end
  local function cutoff(j) return ARGV[4 + n + j] end
  local function totals(j) return KEYS[3 + j] end
  local function stage(c, j) return KEYS[3 + n + (c - 1) * n + j] end
  local candidates = {}
  for c = 1, m do candidates[ARGV[4 + 2 * n + c]] = c end
  local fields = {}
  for j = 1, n do
    fields[#fields + 1] = 'wm:' .. window(j)
    fields[#fields + 1] = 'done:' .. window(j)
  end
  fields[#fields + 1] = 'rb_until'
  fields[#fields + 1] = 'layout'
  fields[#fields + 1] = 'plain_slots'
  local record = board_record(board, ARGV[1], unpack(fields))
  local function wm(j) return tonumber(record[1 + 2 * j]) end
  local function done(j) return record[2 + 2 * j] end
  if lease_held(record[3 + 2 * n]) then return { 'fallback', 'recomputing' } end

  -- Each candidate's geometry (false: a plain slot), read unless the record says no slot
  -- has one (plain_slots: see the header).
  local geo = {}
  if record[5 + 2 * n] ~= '1' then
    geo = redis.call('HMGET', geo_key, unpack(ARGV, 5 + 2 * n, 4 + 2 * n + m))
  end
  for c = 1, m do geo[c] = parse_geometry(geo[c]) or false end

  -- The hashes that hold candidate c's stage j: the stage hash, and on a compact slot its
  -- buckets (a compact slot's plain stage hash exists only while an active relayout
  -- converts it, docs/compact-slots.md, "Relayout": each form is handed on to the same form of the
  -- next stage; the call is atomic, so their order does not matter).
  local function hashes(c, j)
    local list = { stage(c, j) }
    if not geo[c] then return list end
    for i = 0, bucket_count(geo[c]) - 1 do list[#list + 1] = bucket_key(stage(c, j), i) end
    return list
  end

  -- The plan, changing nothing: the (window, candidate, slot) triples due, oldest slot
  -- first within each window, and a bound on the fields they hold. `sizes` keeps the size
  -- of each stage hash measured or renamed into (false: merged into, to be measured).
  local plan, carried, sizes, work = {}, {}, {}, 0
  for j = 1, n do
    local due = redis.call('ZRANGEBYSCORE', index, '(' .. done(j), cutoff(j), 'LIMIT', 0, m + 1)
    for _, slot in ipairs(due) do
      local c = candidates[slot]
      if not c then return { 'fallback', 'slots' } end
      if geo[c] and bucket_count(geo[c]) > MAX_BUCKETS then return { 'fallback', 'big' } end
      local size = carried[c] or 0
      for _, key in ipairs(hashes(c, j)) do
        sizes[key] = redis.call('HLEN', key)
        size = size + sizes[key]
      end
      carried[c] = size
      work = work + size
      if work > max_fields then return { 'fallback', 'big' } end
      plan[#plan + 1] = { j, c, slot }
    end
  end

  -- The record's fields to set (watermarks, retired-through marks), in one HSET at the end.
  local marks = {}
  local subtracted, zeroed, p = 0, 0, 1
  for j = 1, n do
    if wm(j) < tonumber(cutoff(j)) then
      marks[#marks + 1], marks[#marks + 2] = 'wm:' .. window(j), cutoff(j)
    end
    while p <= #plan and plan[p][1] == j do
      local c, slot = plan[p][2], plan[p][3]
      local next_hashes = j < n and hashes(c, j + 1) or {}
      for h, key in ipairs(hashes(c, j)) do
        local names, values = fields_and_values(redis.call('HGETALL', key))
        if #names > 0 then
          zeroed = zeroed + bulk_add(totals(j), true, -1, names, values, nil, nil,
            j == n and KEYS[4 + 2 * n + m * n] or nil)
          local to = next_hashes[h]
          if hand_on(key, to, names, values) then
            sizes[to] = #names
          elseif to then
            sizes[to] = false
          end
          sizes[key] = 0
          subtracted = subtracted + #names
        end
      end
      if j == n then
        redis.call('ZREM', index, slot)
        if geo[c] then redis.call('HDEL', geo_key, slot) end
      end
      p = p + 1
    end
    if tonumber(done(j)) < tonumber(cutoff(j)) then
      marks[#marks + 1], marks[#marks + 2] = 'done:' .. window(j), cutoff(j)
    end
  end
  if #marks > 0 then redis.call('HSET', board, unpack(marks)) end

  -- Whether the slot that just closed should be compacted (see the header).
  local function wants_compacting()
    local closed, minimum = ARGV[5 + 2 * n + m], tonumber(ARGV[6 + 2 * n + m] or '')
    if not minimum or (record[4 + 2 * n] or ARGV[7 + 2 * n + m]) ~= 'compact' then return 0 end
    -- The sizes first: most closed slots of a small board are too small, and that ends it.
    local big = false
    for k = 1, n do
      local key = KEYS[3 + n + m * n + k]
      local size = sizes[key]
      if size == false or (size == nil and (k == 1 or wm(k - 1) >= tonumber(closed))) then
        size = redis.call('HLEN', key)
      end
      if size and size >= minimum then
        big = true
        break
      end
    end
    if not big or not redis.call('ZSCORE', index, closed) then return 0 end
    return redis.call('HEXISTS', geo_key, closed) == 1 and 0 or 1
  end
  gate(board)
  -- Every slot retired left its windows by the boundary window 1's cutoff + its length.
  record_changes(board, 'retire', nil, (tonumber(ARGV[5 + n]) + tonumber(ARGV[5])) * 1000)
  return { 'done', #plan, subtracted, zeroed, wants_compacting() }, subtracted
end

local answers, spent, bound = {}, 0, nil
local k, a = 0, 1
for b = 1, tonumber(ARGV[1]) do
  local keys, args = {}, {}
  for x = 1, tonumber(ARGV[a + 1]) do keys[x] = KEYS[k + x] end
  for x = 1, tonumber(ARGV[a + 2]) do args[x] = ARGV[a + 2 + x] end
  k, a = k + #keys, a + 2 + #args
  bound = bound or tonumber(args[4])
  if spent > bound then
    answers[b] = { 'fallback', 'later' }
  else
    local ok, answer, handled = pcall(retire, keys, args)
    if not ok then
      -- A board refused (refuse: STALE) is answered so; any other error fails the call.
      if not (type(answer) == 'table' and string.find(answer.err or '', '^STALE')) then
        error(answer)
      end
      answer = { 'fallback', 'stale' }
    end
    answers[b], spent = answer, spent + (handled or 0)
  end
end
return answers
