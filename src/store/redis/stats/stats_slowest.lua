-- stats_slowest.lua: put contexts' newest means in their kind's slowest list, each
-- unless the list already holds a newer one, and keep the list to the N highest means.
-- Used on a Cluster only, after stats_record.lua (whose keys live in other hash slots);
-- on a single node stats_record.lua updates the list itself.
--
-- KEYS[1]  the list, score = mean, member = context   slowest_{<kind>}
-- KEYS[2]  per context 'hour:count' of that mean      slowest_meta_{<kind>}
--
-- ARGV[1]  N, entries kept
-- ARGV[2 + 4i .. 5 + 4i], i = 0..: a context, the hour of its mean, the values counted
--          in that hour, the mean
--
-- Returns how many contexts changed the list. Idempotent: a mean is set, never added,
-- and an older (hour, count) never replaces a newer one.

local changed = 0
for i = 2, #ARGV, 4 do
  local context, hour, count, mean = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), ARGV[i + 3]
  local newer = true
  local seen = redis.call('HGET', KEYS[2], context)
  if seen then
    local h, c = string.match(seen, '^(%d+):(%d+)$')
    h, c = tonumber(h), tonumber(c)
    if h > hour or (h == hour and c >= count) then
      newer = false
    end
  end
  if newer then
    redis.call('ZADD', KEYS[1], mean, context)
    redis.call('HSET', KEYS[2], context, ARGV[i + 1] .. ':' .. ARGV[i + 2])
    changed = changed + 1
  end
end
if changed > 0 then
  local out = redis.call('ZRANGE', KEYS[1], 0, -(tonumber(ARGV[1]) + 1))
  if #out > 0 then
    redis.call('ZREM', KEYS[1], unpack(out))
    redis.call('HDEL', KEYS[2], unpack(out))
  end
end
return changed
