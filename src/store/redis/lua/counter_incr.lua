-- counter_incr.lua: add to a counter at every precision at once, atomically.
--
-- KEYS[1]              counter record            counter_{c}
-- KEYS[1+i], i = 1..n  samples of precision i    count_{c}_<p_i>  (field: slice start)
--
-- ARGV[1]              the count to add (an integer, |count| <= 2^53 - 1)
-- ARGV[2]              the time, whole unix seconds
-- ARGV[3]              the precisions, comma-separated, sorted (the record's field)
-- ARGV[4]              a fresh generation, used only when the record is created
-- ARGV[4+i], i = 1..n  precision i in seconds
--
-- Returns {generation, needs_index}: needs_index is 1 until the caller has listed the
-- counter in the index and marked the record (counter_indexed.lua), so a caller that
-- died in between is followed by the next increment. Returns {false, 0} and changes
-- nothing when a sample would leave +-(2^53 - 1).
-- Not idempotent: it adds; never re-sent after a lost reply.

local MAX = 9007199254740991
local count = tonumber(ARGV[1])
local at = tonumber(ARGV[2])
local n = #KEYS - 1

local slices = {}
for i = 1, n do
  local p = tonumber(ARGV[4 + i])
  slices[i] = string.format('%d', at - at % p)
  local now = tonumber(redis.call('HGET', KEYS[1 + i], slices[i]) or '0')
  if math.abs(now + count) > MAX then
    return {false, 0}
  end
end

local record = redis.call('HMGET', KEYS[1], 'gen', 'precisions', 'indexed')
local gen = record[1]
if not gen then
  gen = ARGV[4]
  redis.call('HSET', KEYS[1], 'gen', gen, 'precisions', ARGV[3])
elseif record[2] ~= ARGV[3] then
  -- Precisions changed by config: the record lists them all, so clean-up visits all.
  local seen, list = {}, {}
  for p in string.gmatch(record[2] .. ',' .. ARGV[3], '%d+') do
    if not seen[p] then
      seen[p] = true
      list[#list + 1] = tonumber(p)
    end
  end
  table.sort(list)
  redis.call('HSET', KEYS[1], 'precisions', table.concat(list, ','))
end

for i = 1, n do
  redis.call('HINCRBY', KEYS[1 + i], slices[i], ARGV[1])
end

if record[3] then
  return {gen, 0}
end
return {gen, 1}
