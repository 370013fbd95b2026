-- recompute_max_swap.lua: end a max, min or latest board's recompute by putting its
-- build in place (see recompute_max_scan.lua).
--
-- KEYS[1]  board record                 board_{b}
-- KEYS[2]  the build of the window      rebuild_{b}
-- KEYS[3]  the window's values          stats_{b} or stats_{b}_<W>
-- KEYS[4]  the build's records          rebuild_records_{b}
-- KEYS[5]  the records                  peaks_{b} or newest_{b}
-- KEYS[6], KEYS[7]  dense boards only: the window's tally and distinct values
-- KEYS[8], KEYS[9]  dense boards only: the build's
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  the window, seconds
--
-- Called once every live slot is scanned: the build then holds what the live slots
-- hold, and writes kept it so. Each live key is UNLINKed (freed off Redis's main
-- thread) and its build RENAMEd over it (nothing when the build is empty): O(1), so a
-- reader never sees the window, its records and its tallies disagree. Then the
-- recompute's state, and the window's "building" mark (a window added to the board, see
-- extend_board.lua), are cleared, and a gated board applies its gate to every held
-- member (gate).
-- Returns 'done'. Errors: "STALE ...", "LOST ..." as recompute_max_scan.lua.

local board = KEYS[1]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until')
if record[3] ~= ARGV[2] or now_ms() >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
for _, pair in ipairs({ { 2, 3 }, { 4, 5 }, { 8, 6 }, { 9, 7 } }) do
  local from, to = KEYS[pair[1]], KEYS[pair[2]]
  if from then
    redis.call('UNLINK', to)
    if redis.call('EXISTS', from) == 1 then redis.call('RENAME', from, to) end
  end
end
-- The build holds every member: the hidden ones' values go apart again.
hide_rebuilt(KEYS[3], KEYS[6], KEYS[7], true)
gate(board, true)
redis.call('HDEL', board, 'rb_window', 'rb_phase', 'rb_token', 'rb_until', 'building:' .. ARGV[3])
return 'done'
