-- trend_rescale.lua: one bounded step of moving a trending board's landmark forward by
-- a whole number k of half-lives (every stored value times 2^-k, exact in doubles).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stored values  trend_{b}
-- KEYS[3]  rescale build  trend_{b}_next
--
-- ARGV[1]  expected board version
-- ARGV[2]  now, unix milliseconds
-- ARGV[3]  start a rescale once now is this many half-lives past the landmark (>= 1)
-- ARGV[4]  ZSCAN COUNT of a step
--
-- The first step sets rs_landmark (the new landmark) and rs_cursor = 0 in the record and
-- empties the build; from then on every write also adds to the build in the new scale
-- (trend_write.lua). Each step copies one ZSCAN batch of the stored values into the
-- build, overwriting: a member's build value becomes its stored value times 2^-k, which
-- holds every write so far, and later writes add to both. The cursor lives in the
-- record, so replicas running steps at once share one scan and stay exact. When the scan
-- ends, the build is renamed over the stored values and the landmark set, in the same
-- step. ZSCAN returns every member present for the whole scan; members first written
-- during it are complete in the build already.
-- Returns {state, copied}: state 0 = no rescale due, 1 = under way, 2 = finished.

local record = board_record(KEYS[1], ARGV[1], 'landmark', 'half_life', 'rs_landmark', 'rs_cursor')
local landmark = tonumber(record[3])
local h = tonumber(record[4]) * 1000
local target, cursor = record[5], record[6]
if not target then
  local k = math.floor((tonumber(ARGV[2]) - landmark) / h)
  if k < math.max(1, tonumber(ARGV[3])) then
    return { 0, 0 }
  end
  target = string.format('%d', landmark + k * h)
  cursor = '0'
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[1], 'rs_landmark', target, 'rs_cursor', cursor)
end
local factor = 2 ^ ((landmark - tonumber(target)) / h)
local scan = redis.call('ZSCAN', KEYS[2], cursor, 'COUNT', ARGV[4])
local items = scan[2]
for i = 1, #items, 2 do
  redis.call('ZADD', KEYS[3], string.format('%.17g', tonumber(items[i + 1]) * factor), items[i])
end
if scan[1] ~= '0' then
  redis.call('HSET', KEYS[1], 'rs_cursor', scan[1])
  return { 1, #items / 2 }
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[2])
else
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'landmark', target)
redis.call('HDEL', KEYS[1], 'rs_landmark', 'rs_cursor')
return { 2, #items / 2 }
