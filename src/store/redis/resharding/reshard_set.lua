-- reshard_set.lua: set the shard count of a sharded board's record (shard 0) and the
-- step of a reshard, under a new version (every process's cached copy reloads: see
-- src/store/sharded/reshard.rs); on another shard, renew its version alone.
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the new version
-- ARGV[3]  shards (field shards; 1 deletes it)
-- ARGV[4]  the reshard's step (field resharding: '<to>' while members move, 'sweep
--          <from>' while what writes left behind is swept), or '' when none runs
--
-- Returns 1. Error "STALE ..." when the board is missing, being dropped or of another
-- version (another process changed it first: the caller reloads and sees).

board_record(KEYS[1], ARGV[1])
-- The first version names the board's idempotency records (see extend_board.lua).
redis.call('HSETNX', KEYS[1], 'incarnation', ARGV[1])
redis.call('HSET', KEYS[1], 'version', ARGV[2])
set_field(KEYS[1], 'shards', ARGV[3], '1')
set_field(KEYS[1], 'resharding', ARGV[4], '')
return 1
