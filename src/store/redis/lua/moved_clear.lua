-- moved_clear.lua: forget which members moved off this shard (a reshard that starts
-- anew, or a board that is a shard no more): writes are checked no more.
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  moved set      moved_{b}
--
-- ARGV[1]  board version the caller expects
--
-- Idempotent. Returns 1. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], 'moved')
redis.call('DEL', KEYS[2])
return 1
