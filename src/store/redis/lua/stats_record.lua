-- stats_record.lua: record values in a (context, kind) for their hour: count, sum, min,
-- max, Welford's mean and m2, and histogram buckets; rolls the hour over first.
--
-- KEYS[1]  the newest hour      stat_{<context>}_<kind>
-- KEYS[2]  the hour before it   statprev_{<context>}_<kind>
--
-- ARGV[1]              the caller's hour, unix seconds
-- ARGV[2]              n, the number of values
-- ARGV[2+i], i = 1..n  value i (a finite number), in order
-- ARGV[3+n..]          pairs (histogram bucket field, values in it): z, p<i> or n<i>,
--                      see src/domain/stats.rs
--
-- When the stored hour is older than ARGV[1], it becomes the hour before (if it is the
-- one just before) or goes. A caller whose clock is behind counts in the stored hour.
-- Both keys expire three hours after their last record (nothing reads them later).
-- Returns {hour, count, mean} of the newest hour, for the kind's slowest list.
-- Not idempotent: it adds; never re-sent after a lost reply.

local hour = tonumber(ARGV[1])
local stored = redis.call('HGET', KEYS[1], 'hour')
if stored then
  stored = tonumber(stored)
  if stored < hour then
    if stored == hour - 3600 then
      redis.call('RENAME', KEYS[1], KEYS[2])
    else
      redis.call('UNLINK', KEYS[1], KEYS[2])
    end
  else
    hour = stored
  end
end

local s = redis.call('HMGET', KEYS[1], 'count', 'mean', 'm2', 'min', 'max', 'sum')
local n = tonumber(s[1] or '0')
local mean = tonumber(s[2] or '0')
local m2 = tonumber(s[3] or '0')
local min = s[4] and tonumber(s[4]) or math.huge
local max = s[5] and tonumber(s[5]) or -math.huge
local sum = tonumber(s[6] or '0')
local values = tonumber(ARGV[2])
for i = 1, values do
  local x = tonumber(ARGV[2 + i])
  n = n + 1
  local delta = x - mean
  mean = mean + delta / n
  m2 = m2 + delta * (x - mean)
  if x < min then min = x end
  if x > max then max = x end
  sum = sum + x
end

-- 17 significant digits: a double read back is the same double.
local function exact(v)
  return string.format('%.17g', v)
end
local h = string.format('%d', hour)
redis.call('HSET', KEYS[1], 'hour', h, 'count', n, 'mean', exact(mean), 'm2', exact(m2),
  'min', exact(min), 'max', exact(max), 'sum', exact(sum))
for i = 3 + values, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], 10800)
return {h, n, exact(mean)}
