-- recompute_end.lua: abandon a recompute (its caller failed), releasing its lease at
-- once rather than letting it expire.
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
-- ARGV[1]  the recompute's token
--
-- Clears the recompute's state and unlinks its build, log and scan progress (freed off
-- Redis's main thread), if the token still holds
-- the lease; otherwise does nothing. Returns 1 if it released, 0 if not.

local board = KEYS[1]
if redis.call('HGET', board, 'rb_token') ~= ARGV[1] then
  return 0
end
redis.call('HDEL', board, 'rb_window', 'rb_phase', 'rb_token', 'rb_until', 'rb_fold_member',
  'rb_fold_slot', 'rb_fold_sum')
redis.call('UNLINK', unpack(KEYS, 2))
return 1
