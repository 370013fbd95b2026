-- recompute_fold.lua: compute afresh members of a recompute's log, a bounded range of
-- slots per call.
--
-- KEYS[1]                  board record      board_{b}
-- KEYS[2]                  build             rebuild_{b}
-- KEYS[3]                  log               rebuild_log_{b}
-- KEYS[4]                  slot index        slots_{b}
-- KEYS[5]                  slot geometries   slotgeo_{b}
-- KEYS[5+(i-1)*r+k]        stage k (1..r) of passed slot i (1..m): the stages the window
--                          (the r-th) counts; on a compact slot the script reads the
--                          member's bucket `<stage key>:<i>` of each (same hash tag)
-- KEYS[6+m*r], KEYS[7+m*r] dense boards only: the build's tally and distinct totals
--                          (rebuild_tally_{b}, rebuild_dense_{b}; see retally)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  r, the window's position
-- ARGV[5]  the member the caller believes is being folded ('' none)
-- ARGV[6]  the last slot summed for it ('' none)
-- ARGV[7]  m, number of slots passed: the next live slots after ARGV[6] (from the first
--          when '')
-- ARGV[7+i], i = 1..m   their starts, ascending
-- ARGV[8+m]  time budget of this call, microseconds
--
-- The first call switches the recompute to its fold phase (the caller has scanned every
-- slot). A member's total is the sum of its values in the stages the window counts over
-- every live slot (on a compact slot, the sum of its bucket of each stage, by the
-- slot's geometry, read per slot and call: a board may hold both layouts); on a long window (thousands of slots) that is too much for one call,
-- so the fold of one member may span calls. The record keeps where it is: rb_fold_member
-- (it stays in the log until its total is set), rb_fold_slot (the last slot summed) and
-- rb_fold_sum. A write (or a removal) of that member in a slot up to rb_fold_slot adds
-- its delta to rb_fold_sum (write.lua, remove_member.lua), one in a later slot is read
-- when the fold gets there: so the sum is exact however the calls and writes interleave.
-- A slot created meanwhile after rb_fold_slot makes the passed slots stale ({'slots'}).
-- Each call sums whole slots until the passed ones are summed or the budget would likely
-- be overrun (at least one slot). When the member's sum reaches the last live slot, its
-- build total is set (ZREM when 0) and it leaves the log; with every live slot passed,
-- the call goes on with the next member. A member written after it left the log gets its
-- writes in the build directly (write.lua): the log only shrinks.
-- Each call's effect is a function of the state: a call whose ARGV[5..6] is not where
-- the fold is (it was sent again after its reply was lost) does nothing, so a fold call
-- may be sent again.
-- Returns {'slots'} when the passed slots are not the next live ones (the caller lists
-- them again); {'at', member, slot} when the fold is elsewhere than ARGV[5..6];
-- else {members left in the log, members computed, member, slot}: where the fold is now.
-- Errors: "STALE ...", "LOST ..." as in recompute_scan.lua.

local board, build, log, index = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'rb_phase',
  'rb_fold_member', 'rb_fold_slot', 'rb_fold_sum')
local started = now_us()
local now = math.floor(started / 1000)
if record[3] ~= ARGV[2] or now >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', now + tonumber(ARGV[3]))
if record[5] == 'scan' then
  redis.call('HSET', board, 'rb_phase', 'fold')
end

local member, at = record[6] or '', record[7] or ''
if member ~= ARGV[5] or at ~= ARGV[6] then
  return { 'at', member, at }
end
local r, m = tonumber(ARGV[4]), tonumber(ARGV[7])
local from = (at == '') and '-inf' or ('(' .. at)
local live = redis.call('ZRANGE', index, from, '+inf', 'BYSCORE', 'LIMIT', 0, m + 1)
for i = 1, m do
  if live[i] ~= ARGV[7 + i] then return { 'slots' } end
end
local to_end = #live == m

local budget, folded, elapsed, slowest = tonumber(ARGV[8 + m]), 0, 0, 0
-- Per passed slot, its geometry (false: plain), read once per call.
local geometry = (m > 0) and redis.call('HMGET', KEYS[5], unpack(ARGV, 8, 7 + m)) or {}
for i = 1, m do geometry[i] = parse_geometry(geometry[i]) or false end
-- The member's hash, computed once per member.
local hashed_member, hashed = nil, nil
local function hash_of(name)
  if name ~= hashed_member then hashed_member, hashed = name, member_hash(name) end
  return hashed
end
local sum = tonumber(record[8]) or 0
if member == '' then member = nil end
while true do
  if not member then
    -- A new member starts at the first live slot.
    if at ~= '' or elapsed + slowest > budget then break end
    member = redis.call('SRANDMEMBER', log)
    if not member then break end
    sum = 0
  end
  for i = 1, m do
    if i > 1 and elapsed + slowest > budget then
      -- Out of time: keep the partial sum up to the previous slot.
      redis.call('HSET', board, 'rb_fold_member', member, 'rb_fold_slot', ARGV[6 + i],
        'rb_fold_sum', string.format('%d', sum))
      return { redis.call('SCARD', log), folded, member, ARGV[6 + i] }
    end
    local before = elapsed
    local bucket = geometry[i] and bucket_of(geometry[i], hash_of(member))
    for k = 1, r do
      sum = sum + stage_value(KEYS[5 + (i - 1) * r + k], bucket, member)
    end
    elapsed = now_us() - started
    slowest = math.max(slowest, elapsed - before)
  end
  if not to_end then
    local last = ARGV[7 + m]
    redis.call('HSET', board, 'rb_fold_member', member, 'rb_fold_slot', last,
      'rb_fold_sum', string.format('%d', sum))
    return { redis.call('SCARD', log), folded, member, last }
  end
  if #KEYS > 5 + m * r then
    retally(KEYS[6 + m * r], KEYS[7 + m * r], redis.call('ZSCORE', build, member), sum)
  end
  if sum == 0 then
    redis.call('ZREM', build, member)
  else
    redis.call('ZADD', build, string.format('%d', sum), member)
  end
  redis.call('SREM', log, member)
  redis.call('HDEL', board, 'rb_fold_member', 'rb_fold_slot', 'rb_fold_sum')
  folded = folded + 1
  member = nil
  elapsed = now_us() - started
end
return { redis.call('SCARD', log), folded, '', '' }
