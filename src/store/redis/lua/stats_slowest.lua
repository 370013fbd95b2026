-- stats_slowest.lua: put a context's newest mean in its kind's slowest list, unless the
-- list already holds a newer one, and keep the list to the N highest means.
--
-- KEYS[1]  the list, score = mean, member = context   slowest_{<kind>}
-- KEYS[2]  per context 'hour:count' of that mean      slowest_meta_{<kind>}
--
-- ARGV[1]  the context
-- ARGV[2]  the hour of the mean
-- ARGV[3]  the values counted in that hour
-- ARGV[4]  the mean
-- ARGV[5]  N, entries kept
--
-- Returns 1 when the list changed. Idempotent: a mean is set, never added, and an
-- older (hour, count) never replaces a newer one.

local seen = redis.call('HGET', KEYS[2], ARGV[1])
if seen then
  local h, c = string.match(seen, '^(%d+):(%d+)$')
  h, c = tonumber(h), tonumber(c)
  local hour, count = tonumber(ARGV[2]), tonumber(ARGV[3])
  if h > hour or (h == hour and c >= count) then
    return 0
  end
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
local out = redis.call('ZRANGE', KEYS[1], 0, -(tonumber(ARGV[5]) + 1))
if #out > 0 then
  redis.call('ZREM', KEYS[1], unpack(out))
  redis.call('HDEL', KEYS[2], unpack(out))
end
return 1
