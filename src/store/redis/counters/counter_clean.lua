-- counter_clean.lua: delete a counter's old samples, and forget the counter when every
-- precision is then empty, atomically with checking that it is.
--
-- KEYS[1]              counter record            counter_{c}
-- KEYS[1+i], i = 1..n  samples of precision i    count_{c}_<p_i>
--
-- ARGV[1]              the precisions the caller read from the record (comma-separated)
-- ARGV[2]              most samples deleted by this call (bounds the call)
-- ARGV[2+i], i = 1..n  the oldest slice start kept at precision i, or '-' when this
--                      pass does not visit precision i
--
-- Returns {status, removed, generation}: status 'gone' (no record; generation false),
-- 'changed' (the record lists other precisions: read it again), 'more' (the budget ran
-- out: call again), 'kept' or 'forgotten' (the record and every sample hash are gone;
-- the caller then removes the index entry of that generation).
-- Idempotent: it deletes what the cutoffs name; a second run finds less or nothing.

local record = redis.call('HMGET', KEYS[1], 'gen', 'precisions')
if not record[1] then
  return {'gone', 0, false}
end
if record[2] ~= ARGV[1] then
  return {'changed', 0, record[1]}
end

local budget = tonumber(ARGV[2])
local removed = 0
for i = 1, #KEYS - 1 do
  local cutoff = ARGV[2 + i]
  if cutoff ~= '-' then
    cutoff = tonumber(cutoff)
    local old = {}
    for _, slice in ipairs(redis.call('HKEYS', KEYS[1 + i])) do
      if tonumber(slice) < cutoff then
        if removed + #old >= budget then
          if #old > 0 then
            redis.call('HDEL', KEYS[1 + i], unpack(old))
          end
          return {'more', removed + #old, record[1]}
        end
        old[#old + 1] = slice
      end
    end
    if #old > 0 then
      redis.call('HDEL', KEYS[1 + i], unpack(old))
      removed = removed + #old
    end
  end
end

for i = 1, #KEYS - 1 do
  if redis.call('EXISTS', KEYS[1 + i]) == 1 then
    return {'kept', removed, record[1]}
  end
end
redis.call('DEL', KEYS[1])
return {'forgotten', removed, record[1]}
