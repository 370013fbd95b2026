-- gate_epoch.lua: the next number of a sharded board's review gate across its shards
-- (docs/design.md, "A review gate on a sharded board"), kept by shard 0 in
-- board_{b}:bars, field 'next'.
--
-- KEYS[1]  shard 0's record   board_{b}
-- ARGV[1]  board version the caller expects
--
-- Returns the number. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
return redis.call('HINCRBY', KEYS[1] .. ':bars', 'next', 1)
