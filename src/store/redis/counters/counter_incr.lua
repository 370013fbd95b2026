-- counter_incr.lua: add a batch of increments to a counter at every precision at once,
-- atomically (the caller sums the increments of each slice first: one HINCRBY per
-- touched sample), if the counter's own precisions are those the caller assumed.
--
-- KEYS[1]              counter record            counter_{c}
-- KEYS[2]              its own precisions        counterconf_{c}
-- KEYS[2+i], i = 1..n  samples of precision i    count_{c}_<p_i>  (field: slice start)
--
-- ARGV[1]              the precisions, comma-separated, sorted (the record's field)
-- ARGV[2]              a fresh generation, used only when the record is created
-- ARGV[3]              the counter's own precisions as the caller assumed them ('' for
--                      none: the global ones apply)
-- ARGV[4..]            for each precision i in KEYS order: m_i, the number of slices,
--                      then m_i pairs (slice start, sum to add)
--
-- Returns {generation, needs_index}: needs_index is 1 until the caller has listed the
-- counter in the index and marked the record (counter_indexed.lua), so a caller that
-- died in between is followed by the next increment. Returns {false, 0} and changes
-- nothing when a sample would leave +-(2^53 - 1); {false, 1, own precisions or ''}
-- and changes nothing when the counter's own precisions are not those assumed.
-- Not idempotent: it adds; never re-sent after a lost reply.

local MAX = 9007199254740991

local own = redis.call('GET', KEYS[2]) or ''
if own ~= ARGV[3] then
  return {false, 1, own}
end

-- Checks every sample first, so a refused batch changes nothing.
local at = 4
for i = 3, #KEYS do
  local m = tonumber(ARGV[at])
  for j = 1, m do
    local slice, sum = ARGV[at + 2 * j - 1], tonumber(ARGV[at + 2 * j])
    local now = tonumber(redis.call('HGET', KEYS[i], slice) or '0')
    if math.abs(now + sum) > MAX then
      return {false, 0}
    end
  end
  at = at + 1 + 2 * m
end

local record = redis.call('HMGET', KEYS[1], 'gen', 'precisions', 'indexed')
local gen = record[1]
if not gen then
  gen = ARGV[2]
  redis.call('HSET', KEYS[1], 'gen', gen, 'precisions', ARGV[1])
elseif record[2] ~= ARGV[1] then
  -- Precisions changed by config: the record lists them all, so clean-up visits all.
  local seen, list = {}, {}
  for p in string.gmatch(record[2] .. ',' .. ARGV[1], '%d+') do
    if not seen[p] then
      seen[p] = true
      list[#list + 1] = tonumber(p)
    end
  end
  table.sort(list)
  redis.call('HSET', KEYS[1], 'precisions', table.concat(list, ','))
end

at = 4
for i = 3, #KEYS do
  local m = tonumber(ARGV[at])
  for j = 1, m do
    redis.call('HINCRBY', KEYS[i], ARGV[at + 2 * j - 1], ARGV[at + 2 * j])
  end
  at = at + 1 + 2 * m
end

if record[3] then
  return {gen, 0}
end
return {gen, 1}
