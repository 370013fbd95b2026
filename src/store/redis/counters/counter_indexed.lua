-- counter_indexed.lua: mark a counter record as listed in the index, if it is still the
-- generation the caller listed.
--
-- KEYS[1]  counter record   counter_{c}
-- ARGV[1]  the generation the caller put in the index
--
-- Returns 1 when marked. Idempotent.

if redis.call('HGET', KEYS[1], 'gen') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'indexed', '1')
  return 1
end
return 0
