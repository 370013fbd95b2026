-- remove_member.lua: remove one member from some slots of a board, keeping totals exact.
--
-- KEYS[1]                  board record    board_{b}
-- KEYS[1+j], j = 1..n      totals of window j, smallest first
-- KEYS[1+n+(i-1)*n+k]      stage k (1..n) of slot i (1..m), as in write.lua
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  n, number of windows
-- ARGV[3]  the member
--
-- A value in stage k of a slot is counted in the totals of windows k..n, so deleting it
-- subtracts it from exactly those totals (ZREM at exactly zero). Called in batches of
-- slots; since every batch keeps totals equal to the slot data, concurrent writes and
-- retirements stay exact.
-- Returns the number of stage values deleted. Error "STALE ..." as in write.lua.

local board = KEYS[1]
local n, member = tonumber(ARGV[2]), ARGV[3]
local record = redis.call('HMGET', board, 'version', 'dropping')
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end

local function negate(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end

local deleted = 0
for key = 2 + n, #KEYS do
  local k = (key - 2 - n) % n + 1
  local value = redis.call('HGET', KEYS[key], member)
  if value then
    redis.call('HDEL', KEYS[key], member)
    deleted = deleted + 1
    for j = k, n do
      if tonumber(redis.call('ZINCRBY', KEYS[1 + j], negate(value), member)) == 0 then
        redis.call('ZREM', KEYS[1 + j], member)
      end
    end
  end
end
return deleted
