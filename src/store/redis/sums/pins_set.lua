-- pins_set.lua: set a board's pins (the members shown on the first page of its top at
-- their positions) under a new version, so that every process's cached board reloads
-- before its next read (reads check the version) and sees them.
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the new version
-- ARGV[3]  the pins, JSON (field pins), or '' for none
--
-- Returns 1. Error "STALE ..." when the board is missing, being dropped or of another
-- version (another process changed it first: the caller reloads and tries again).

board_record(KEYS[1], ARGV[1])
-- The first version names the board's idempotency records (see extend_board.lua).
redis.call('HSETNX', KEYS[1], 'incarnation', ARGV[1])
redis.call('HSET', KEYS[1], 'version', ARGV[2])
set_field(KEYS[1], 'pins', ARGV[3], '')
return 1
