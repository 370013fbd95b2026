-- counter_drop.lua: delete a counter: its record and the sample hash of every precision.
--
-- KEYS[1]              counter record            counter_{c}
-- KEYS[1+i], i = 1..n  samples of precision i    count_{c}_<p_i>
--
-- ARGV[1]              the precisions the caller read from the record (comma-separated)
--
-- Returns {status, generation}: 'gone' (no record), 'changed' (read the record again),
-- 'dropped'. Sample hashes are bounded by clean-up, and go with UNLINK.
-- Idempotent.

local record = redis.call('HMGET', KEYS[1], 'gen', 'precisions')
if not record[1] then
  return {'gone', false}
end
if record[2] ~= ARGV[1] then
  return {'changed', record[1]}
end
redis.call('UNLINK', unpack(KEYS))
return {'dropped', record[1]}
