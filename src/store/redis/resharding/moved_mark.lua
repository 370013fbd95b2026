-- moved_mark.lua: mark members as moved off this shard of a sharded board (a reshard
-- takes them to another): writers send a marked member's writes to its new shard.
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  moved set      moved_{b}
--
-- ARGV[1]      board version the caller expects
-- ARGV[2..]    the members
--
-- Idempotent. Returns 1. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
for x = 2, #ARGV, 1000 do
  redis.call('SADD', KEYS[2], unpack(ARGV, x, math.min(x + 999, #ARGV)))
end
return 1
