-- retire_swap.lua: retire window 1 of a board whose first window is one slot long
-- (W1 = L) by rebuilding its totals from the newer slots, in one bounded call.
--
-- KEYS[1]      board record                  board_{b}
-- KEYS[2]      slot index                    slots_{b}
-- KEYS[3]      slot geometries               slotgeo_{b}
-- KEYS[4]      window 1's totals             stats_{b}
-- KEYS[5]      the closed slot's stage 1     slot_{b}_<s>
-- KEYS[6]      the closed slot's stage 2     slot_{b}_<s>_1 (named even when window 1 is
--              the board's only window; then untouched)
-- KEYS[6+c]    newer slot c's stage 1        slot_{b}_<t_c>             (c = 1..m)
-- then, on a dense board (ARGV[6] = 'dense'): window 1's tally and distinct totals
--              (tally_{b}, dense_{b}; see retally in the prelude)
-- KEYS[#KEYS]  member data                   data_{b}: when window 1 is the only window
--              (the largest), a member it no longer counts loses its data (see below)
--
-- ARGV[1]      board version the caller expects
-- ARGV[2]      window 1, seconds (fields wm:<W>, done:<W>, building:<W>)
-- ARGV[3]      s, the slot to retire (the only slot retire_begin.lua listed)
-- ARGV[4]      most fields the rebuild may read: the newer slots' stage 1 plus the
--              closed slot's stage 2 (its bound, see below)
-- ARGV[5]      'last' when window 1 is the board's only window, else ''
-- ARGV[6]      'dense' on a dense board, else ''
-- ARGV[7]      m, how many newer slots
-- ARGV[7+c]    newer slot c's start: every live slot after s, as the caller listed them
--
-- Why it is exact (docs/design.md, "Retirement", "Window 1 of one slot: swap"): by the
-- stage invariant, window 1's totals are total_1(m) = sum over live slots t of X_1(t)[m],
-- and X_1 of every slot at or before done:<W1> is empty (window 1 retired it). When s is
-- the only live slot in (done, cutoff], window 1's totals are X_1(s) plus the newer
-- slots' X_1, so once s leaves window 1 they are exactly the newer slots' X_1 summed:
-- the call UNLINKs the totals (Redis frees the big zset off its main thread) and
-- rebuilds them from the newer slots (zero sums skipped); on a dense board the tally and
-- distinct totals likewise. X_1(s) then moves to stage 2, which window 2 subtracts:
-- one RENAME when X_2(s) does not exist, else X_2(s) is merged into X_1(s) first
-- (in bulk: HMGET, HSET, HDEL at exactly 0), UNLINKed, and X_1(s) renamed. When window 1
-- is the only window there is no stage 2: X_1(s) is UNLINKed and s leaves the index (as
-- the largest window's retirement does). Finally done:<W1> := s.
-- Member data (only window): the data of every member the new totals lack is deleted,
-- found by reading data_{b} whole (HKEYS, each checked against the kept members),
-- so its fields count in the bound ('big' when they overrun it).
--
-- It first checks, changing nothing, and answers {'fallback', reason} unless all hold:
-- the record has the expected version and is not dropping (else STALE, as every
-- retirement script); no recompute lease ('recomputing') nor relayout lease
-- ('relayout'); window 1 is not being built ('building'); not a trending board
-- ('trending'); the board hides no member, has no review gate and no watch ('hidden': its
-- rebuilt totals would list hidden members, and the others' steps need their scripts); wm:<W1> >= s ('order': retire_begin.lua froze it); s is the only live
-- slot in (done:<W1>, s] ('slots'); the live slots after s are exactly ARGV[8..] (else
-- 'slots'); s and every newer slot are plain, without geometry ('compact'); the newer
-- slots' stage 1 plus X_2(s) hold at most ARGV[4] fields ('big'). A call finding
-- done:<W1> >= s (another retirer swapped, or this call's reply was lost) answers
-- {'already'} having done nothing: the call is idempotent.
-- Returns {'swapped', fields of X_1(s) (what window 1 stopped counting), members
-- zeroed (ranked by window 1 before, not after), members after, fields read (the bound's
-- measure)}.

local board, index, geo_key, totals = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local closed, closed_next = KEYS[5], KEYS[6]
local window, slot, max_fields = ARGV[2], ARGV[3], tonumber(ARGV[4])
local last, is_dense, m = ARGV[5] == 'last', ARGV[6] == 'dense', tonumber(ARGV[7])
local tally, dense = nil, nil
if is_dense then tally, dense = KEYS[7 + m], KEYS[8 + m] end
local done_field = 'done:' .. window

local record = board_record(board, ARGV[1], 'wm:' .. window, done_field, 'rb_until',
  'rl_until', 'building:' .. window, 'kind')
local s = tonumber(slot)
if tonumber(record[4]) >= s then return { 'already' } end
if lease_held(record[5]) then return { 'fallback', 'recomputing' } end
if lease_held(record[6]) then return { 'fallback', 'relayout' } end
if record[7] then return { 'fallback', 'building' } end
if record[8] == 'trending' then return { 'fallback', 'trending' } end
-- A rebuilt total would list a hidden member: retire_chunk.lua keeps it apart.
if hidden_members or review_rank or watch_spec then return { 'fallback', 'hidden' } end
if tonumber(record[3]) < s then return { 'fallback', 'order' } end

-- s is the only live slot window 1 still counts and has left it.
local due = redis.call('ZRANGEBYSCORE', index, '(' .. record[4], slot, 'LIMIT', 0, 2)
if #due ~= 1 or due[1] ~= slot then return { 'fallback', 'slots' } end
-- The newer slots are exactly those the caller named (so their keys are in KEYS).
local newer = redis.call('ZRANGEBYSCORE', index, '(' .. slot, '+inf', 'LIMIT', 0, m + 1)
if #newer ~= m then return { 'fallback', 'slots' } end
for c = 1, m do
  if newer[c] ~= ARGV[7 + c] then return { 'fallback', 'slots' } end
end
-- Every one of them plain, s too.
if redis.call('HEXISTS', geo_key, slot) == 1 then return { 'fallback', 'compact' } end
if m > 0 then
  for _, g in ipairs(redis.call('HMGET', geo_key, unpack(newer))) do
    if g then return { 'fallback', 'compact' } end
  end
end
-- The work is small.
local data = KEYS[#KEYS]
local work = last and redis.call('HLEN', data) or redis.call('HLEN', closed_next)
for c = 1, m do work = work + redis.call('HLEN', KEYS[6 + c]) end
if work > max_fields then return { 'fallback', 'big' } end

-- Window 1's new totals: the newer slots' stage 1, summed per member (zero sums
-- skipped). With one newer slot (the open slot, the common case) its values are the
-- totals as they stand: a stage hash holds no zero.
local kept, scores = {}, {}
if m == 1 then
  local flat = redis.call('HGETALL', KEYS[7])
  for p = 1, #flat, 2 do
    kept[#kept + 1] = flat[p]
    scores[#scores + 1] = flat[p + 1]
  end
else
  local sums, members = {}, {}
  for c = 1, m do
    local flat = redis.call('HGETALL', KEYS[6 + c])
    for p = 1, #flat, 2 do
      local member = flat[p]
      local before = sums[member]
      if not before then members[#members + 1] = member end
      sums[member] = (before or 0) + tonumber(flat[p + 1])
    end
  end
  for _, member in ipairs(members) do
    if sums[member] ~= 0 then
      kept[#kept + 1] = member
      scores[#scores + 1] = string.format('%d', sums[member])
    end
  end
end

-- Members ranked before and not after: those of the old totals minus the kept ones
-- the old totals held (a kept member absent before was at exactly 0).
local zeroed = redis.call('ZCARD', totals)
for from = 1, #kept, 1000 do
  local found = redis.call('ZMSCORE', totals, unpack(kept, from, math.min(from + 999, #kept)))
  for x = 1, #found do
    if found[x] then zeroed = zeroed - 1 end
  end
end

redis.call('UNLINK', totals)
local counts, totals_seen = {}, {}
for from = 1, #kept, 1000 do
  local args = {}
  for x = from, math.min(from + 999, #kept) do
    args[#args + 1] = scores[x]
    args[#args + 1] = kept[x]
    if is_dense then
      local value = tonumber(scores[x])
      if value > 0 then
        if not counts[value] then totals_seen[#totals_seen + 1] = value end
        counts[value] = (counts[value] or 0) + 1
      end
    end
  end
  redis.call('ZADD', totals, unpack(args))
end
if is_dense then
  redis.call('UNLINK', tally, dense)
  for from = 1, #totals_seen, 500 do
    local tally_args, dense_args = {}, {}
    for x = from, math.min(from + 499, #totals_seen) do
      local t = string.format('%d', totals_seen[x])
      tally_args[#tally_args + 1] = t
      tally_args[#tally_args + 1] = counts[totals_seen[x]]
      dense_args[#dense_args + 1] = t
      dense_args[#dense_args + 1] = t
    end
    redis.call('HSET', tally, unpack(tally_args))
    redis.call('ZADD', dense, unpack(dense_args))
  end
end

-- The only window: members it no longer counts lose their data.
if last then
  local held, gone = {}, {}
  for _, member in ipairs(kept) do held[member] = true end
  for _, member in ipairs(redis.call('HKEYS', data)) do
    if not held[member] then gone[#gone + 1] = member end
  end
  for from = 1, #gone, 1000 do
    redis.call('HDEL', data, unpack(gone, from, math.min(from + 999, #gone)))
  end
end

-- X_1(s) on to stage 2 (or gone, for the only window).
local retired = redis.call('HLEN', closed)
if last then
  -- s is plain (checked above): no geometry to drop with its index entry.
  redis.call('UNLINK', closed)
  redis.call('ZREM', index, slot)
else
  -- The late values of X_2(s) (small: within the bound) are merged into X_1(s), not
  -- the other way round, so the big hash is only renamed.
  local fields, values = fields_and_values(redis.call('HGETALL', closed_next))
  if #fields > 0 then
    bulk_add(closed, false, 1, fields, values)
    redis.call('UNLINK', closed_next)
  end
  if redis.call('EXISTS', closed) == 1 then
    redis.call('RENAME', closed, closed_next)
  end
end
redis.call('HSET', board, done_field, slot)
return { 'swapped', retired, zeroed, #kept, work }
