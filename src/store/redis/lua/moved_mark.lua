-- moved_mark.lua: mark members as moved off this shard of a sharded board (a reshard
-- takes them to another): from this call on, write.lua, write_plain.lua and data_set.lua
-- refuse a call holding one with MOVED, so the caller writes it where it went.
--
-- KEYS[1]  board record   board_{b}   (field moved = 1 while the set below is kept)
-- KEYS[2]  moved set      moved_{b}
--
-- ARGV[1]      board version the caller expects
-- ARGV[2..]    the members
--
-- Idempotent. Returns 1. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], 'moved', 1)
for x = 2, #ARGV, 1000 do
  redis.call('SADD', KEYS[2], unpack(ARGV, x, math.min(x + 999, #ARGV)))
end
return 1
