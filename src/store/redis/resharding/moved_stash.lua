-- moved_stash.lua: keep what a member takes from this shard of a sharded board while a
-- reshard moves it (the first stash stays: a move cut short is finished with it).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stashes        moving_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the member
-- ARGV[3]  its stash
--
-- Idempotent. Returns the stash kept. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3])
return redis.call('HGET', KEYS[2], ARGV[2])
