-- recompute_fold.lua: compute afresh a few members of a recompute's log.
--
-- KEYS[1]                  board record      board_{b}
-- KEYS[2]                  build             rebuild_{b}
-- KEYS[3]                  log               rebuild_log_{b}
-- KEYS[4]                  slot index        slots_{b}
-- KEYS[4+(i-1)*r+k]        stage k (1..r) of live slot i (1..m): the stages the window
--                          (the r-th) counts
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  r, the window's position
-- ARGV[5]  m, number of live slots passed
-- ARGV[5+i], i = 1..m   the live slots' starts
-- ARGV[6+m]  most members to compute in this call
-- ARGV[7+m]  time budget of this call, microseconds
--
-- The first call switches the recompute to its fold phase (the caller has scanned every
-- slot). Then each call pops up to ARGV[6+m] members from the log (fewer when one more
-- would likely overrun its time budget) and sets each one's build total to the sum of
-- its values in the stages the window counts, over every live slot (ZREM when 0). A
-- member written after this call is no longer in the log, so its write goes to the
-- build directly (write.lua): the log only shrinks.
-- Returns {'slots'} when the index holds a slot not passed (the caller lists them again),
-- else {members left in the log, members computed}. Errors: "STALE ...", "LOST ..." as in recompute_scan.lua.

local board, build, log, index = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local record = redis.call('HMGET', board, 'version', 'dropping', 'rb_token', 'rb_until', 'rb_phase')
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local started = now_us()
local now_ms = math.floor(started / 1000)
if record[3] ~= ARGV[2] or now_ms >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', now_ms + tonumber(ARGV[3]))

local r, m = tonumber(ARGV[4]), tonumber(ARGV[5])
local passed = {}
for i = 1, m do passed[ARGV[5 + i]] = true end
for _, slot in ipairs(redis.call('ZRANGE', index, 0, -1)) do
  if not passed[slot] then return { 'slots' } end
end
if record[5] == 'scan' then
  redis.call('HSET', board, 'rb_phase', 'fold')
end

local limit, budget, folded = tonumber(ARGV[6 + m]), tonumber(ARGV[7 + m]), 0
local elapsed, slowest = 0, 0
while folded < limit and elapsed + slowest <= budget do
  local member = redis.call('SPOP', log)
  if not member then break end
  folded = folded + 1
  local total = 0
  for key = 5, #KEYS do
    total = total + (tonumber(redis.call('HGET', KEYS[key], member)) or 0)
  end
  if total == 0 then
    redis.call('ZREM', build, member)
  else
    redis.call('ZADD', build, string.format('%d', total), member)
  end
  local before = elapsed
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
end
return { redis.call('SCARD', log), folded }
