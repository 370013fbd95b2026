-- stats_record.lua: record one value in a (context, kind) for its hour: count, sum, min,
-- max, Welford's mean and m2, and a histogram bucket; rolls the hour over first.
--
-- KEYS[1]  the newest hour      stat_{<context>}_<kind>
-- KEYS[2]  the hour before it   statprev_{<context>}_<kind>
--
-- ARGV[1]  the value (a finite number)
-- ARGV[2]  its histogram bucket field (z, p<i> or n<i>; see src/domain/stats.rs)
-- ARGV[3]  the caller's hour, unix seconds
--
-- When the stored hour is older than ARGV[3], it becomes the hour before (if it is the
-- one just before) or goes. A caller whose clock is behind counts in the stored hour.
-- Both keys expire three hours after their last record (nothing reads them later).
-- Returns {hour, count, mean} of the newest hour, for the kind's slowest list.
-- Not idempotent: it adds; never re-sent after a lost reply.

local hour = tonumber(ARGV[3])
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
local x = tonumber(ARGV[1])
local n = tonumber(s[1] or '0') + 1
local mean = tonumber(s[2] or '0')
local m2 = tonumber(s[3] or '0')
local delta = x - mean
mean = mean + delta / n
m2 = m2 + delta * (x - mean)
local min, max = x, x
if n > 1 then
  min = math.min(tonumber(s[4]), x)
  max = math.max(tonumber(s[5]), x)
end
local sum = tonumber(s[6] or '0') + x

-- 17 significant digits: a double read back is the same double.
local function exact(v)
  return string.format('%.17g', v)
end
local h = string.format('%d', hour)
redis.call('HSET', KEYS[1], 'hour', h, 'count', n, 'mean', exact(mean), 'm2', exact(m2),
  'min', exact(min), 'max', exact(max), 'sum', exact(sum))
redis.call('HINCRBY', KEYS[1], ARGV[2], 1)
redis.call('EXPIRE', KEYS[1], 10800)
return {h, n, exact(mean)}
