-- moved_clear.lua: forget the members moved off this shard and the moves under way (a
-- reshard that ended).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  moved set      moved_{b}
-- KEYS[3]  stashes        moving_{b}
--
-- ARGV[1]  board version the caller expects
--
-- Idempotent. Returns 1. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2], KEYS[3])
return 1
