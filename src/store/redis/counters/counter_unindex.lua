-- counter_unindex.lua: remove a counter from the index if the entry is the generation
-- the caller forgot (an increment that started the counter afresh since has listed a
-- new generation, which stays).
--
-- KEYS[1]  the index of counters   rollboard:counters  (field: name, value: generation)
-- ARGV[1]  the counter's name
-- ARGV[2]  the generation forgotten
--
-- Returns 1 when removed. Idempotent.

if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
