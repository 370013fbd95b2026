-- snapshot_delivered.lua: move a window's snapshot delivery cursor up to a boundary.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  delivery cursors  snapsent_{b} (field = window seconds)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the window, seconds
-- ARGV[3]  the boundary (unix seconds) whose snapshot was delivered
--
-- The cursor never moves back, so replicas that deliver the same snapshots in another
-- order, or a re-sent call, leave the newest. The record is checked first, so a call
-- that comes after a drop leaves no key behind. Returns the cursor.
-- Error "STALE ..." when the board is missing, being dropped or of another version.

board_record(KEYS[1], ARGV[1])
local current = redis.call('HGET', KEYS[2], ARGV[2])
if not current or tonumber(current) < tonumber(ARGV[3]) then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  return tonumber(ARGV[3])
end
return tonumber(current)
