-- set_snapshots.lua: set or clear a board's period snapshots policy (field snapshots).
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the policy, 'top,keep', or '' to take no more snapshots
--
-- The policy changes no data, so a live board takes it as is (the streams stay; a
-- smaller keep trims them at the next snapshot). Returns 1.
-- Error "STALE ..." when the board is missing, being dropped or of another version.

board_record(KEYS[1], ARGV[1])
set_field(KEYS[1], 'snapshots', ARGV[2], '')
return 1
