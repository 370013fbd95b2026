-- recompute_swap.lua: end a recompute by putting its build in place of the totals.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  log               rebuild_log_{b}
-- KEYS[4]  the window's totals (stats_{b} or stats_{b}_<W>)
-- KEYS[5]  scan progress     rebuild_scan_{b}
-- KEYS[6], KEYS[7]  dense boards only: the window's tally and distinct totals
--          (tally_{b}[_<W>], dense_{b}[_<W>]; see retally in the prelude)
-- KEYS[8], KEYS[9]  dense boards only: the build's (rebuild_tally_{b}, rebuild_dense_{b}),
--          kept exact beside the build by every script that changes it
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  the window, seconds
--
-- Only in the fold phase with an empty log: every member of the build is then exact, and
-- writes keep it so. The old totals (and the scan's progress) are UNLINKed first (freed off Redis's main thread: a
-- RENAME onto them would free a large zset in this call, ~100 ms for 200k members); then
-- RENAME makes the build the totals in O(1) (nothing when the build is empty: no member
-- has a non-zero total); then the recompute's state, and the window's
-- "building" mark (a window added to the board, see extend_board.lua), are cleared.
-- On a dense board the build's tally and distinct totals replace the window's in the
-- same call, by UNLINK and RENAME: O(1), so all three change together. The build holds
-- hidden members too (see hidden_members): each then goes to <totals>:hidden.
-- Returns {'done'}, or {members left in the log} when more must be folded first.
-- Errors: "STALE ...", "LOST ..." as in recompute_scan.lua.

local board, build, log, totals = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'rb_phase')
local now = now_ms()
if record[3] ~= ARGV[2] or record[5] ~= 'fold' or now >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
local left = redis.call('SCARD', log)
if left > 0 then
  return { left }
end
redis.call('UNLINK', totals, KEYS[5])
if redis.call('EXISTS', build) == 1 then
  redis.call('RENAME', build, totals)
end
if KEYS[6] then
  -- The build's tally and distinct totals, exact as the build is, take the place of the
  -- window's the same way.
  redis.call('UNLINK', KEYS[6], KEYS[7])
  if redis.call('EXISTS', KEYS[8]) == 1 then redis.call('RENAME', KEYS[8], KEYS[6]) end
  if redis.call('EXISTS', KEYS[9]) == 1 then redis.call('RENAME', KEYS[9], KEYS[7]) end
end
-- The build holds hidden members too: each goes to the window's hidden totals.
hide_rebuilt(totals, KEYS[6], KEYS[7])
gate(board, true)
record_changes(board, 'recompute')
redis.call('HDEL', board, 'rb_window', 'rb_phase', 'rb_token', 'rb_until', 'rb_fold_member',
  'rb_fold_slot', 'rb_fold_sum', 'building:' .. ARGV[3])
return { 'done' }
