-- recompute_begin.lua: start rebuilding one window's totals from its live slots.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  log               rebuild_log_{b}
-- KEYS[4]  scan progress     rebuild_scan_{b}
-- KEYS[5], KEYS[6]  the build's tally and distinct totals (rebuild_tally_{b},
--          rebuild_dense_{b}; only a dense board fills them)
-- KEYS[7]  the build's records (rebuild_records_{b}; only a max, min or latest board's
--          recompute fills it, recompute_max_scan.lua)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the window, seconds
-- ARGV[3]  the caller's token (random; every later call must present it)
-- ARGV[4]  lease, milliseconds
--
-- A recompute runs in two phases while writes go on:
--   scan: the caller adds every stage value counted by the window, slot by slot, to the
--     build (recompute_scan.lua). A write that touches the window adds nothing to the
--     build in a stage hash not scanned yet (the scan will read it), adds its delta to
--     the build in one scanned already, and adds its member to the log in one being
--     scanned (write.lua, the prelude's recompute_hook): that member's total will be
--     computed afresh. A slot created meanwhile is marked scanned by the write that
--     creates it (the scan listed the slots before).
--     Retirement waits meanwhile (retire_*.lua answer RECOMPUTING), so no stage value
--     moves while it is scanned, and every member left out of the log is exact in the
--     build once the scan ends.
--   fold: (recompute_fold.lua) logged members are computed afresh from all their slot
--     values, a bounded range of slots per call (rb_fold_* in the record say where); writes now apply their delta to the build too, unless
--     the member is still in the log. The log only shrinks, so the fold ends, and then
--     recompute_swap.lua renames the build over the totals: O(1), atomic.
-- A max, min or latest board's recompute holds the same state and lease, and scans and
-- swaps with scripts of its own (recompute_max_scan.lua, recompute_max_swap.lua).
-- The scan records how far it got in each stage hash (recompute_scan.lua), so a call sent
-- again after its reply was lost adds nothing twice.
-- The state lives in the record: rb_window, rb_phase, rb_token and rb_until (the lease
-- expiry by the server's clock, extended by every call). A recompute whose process died
-- simply expires: writes stop telling it, retirement resumes, the next recompute starts
-- over.
-- Returns 'ok'. Errors: "STALE ..." as in write.lua; "RECOMPUTING ..." while another
-- recompute of the board holds its lease; "RELAYOUT ..." while an active relayout holds
-- its own (rl_until, set by relayout_chunk.lua: a conversion moving values between the
-- forms of a stage would make the scan see one twice); "REMOVING <member>" while a max,
-- min or latest board's removal of that member is pending (remove_max.lua): the caller
-- finishes it, then begins again.

local board = KEYS[1]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'rl_until', 'rm_member')
local now = now_ms()
if record[3] and record[3] ~= ARGV[3] and now < tonumber(record[4]) then
  return redis.error_reply('RECOMPUTING another recompute of this board is running')
end
if lease_held(record[5]) then
  return redis.error_reply('RELAYOUT an active relayout of this board is running')
end
if record[6] then
  return redis.error_reply('REMOVING ' .. record[6])
end
-- UNLINK: a build left by an earlier recompute can hold every member; free it off the
-- main thread.
redis.call('UNLINK', unpack(KEYS, 2))
redis.call('HDEL', board, 'rb_fold_member', 'rb_fold_slot', 'rb_fold_sum')
unquiet(board)
redis.call('HSET', board, 'rb_window', ARGV[2], 'rb_phase', 'scan', 'rb_token', ARGV[3],
  'rb_until', now + tonumber(ARGV[4]))
return 'ok'
