-- recompute_swap.lua: end a recompute by putting its build in place of the totals.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  log               rebuild_log_{b}
-- KEYS[4]  the window's totals (stats_{b} or stats_{b}_<W>)
-- KEYS[5]  scan progress     rebuild_scan_{b}
-- KEYS[6], KEYS[7]  dense boards only: the window's tally and distinct totals
--          (tally_{b}[_<W>], dense_{b}[_<W>]; see retally in the prelude)
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
-- On a dense board the tally and distinct totals are rebuilt from the new totals in
-- this same call, so they stay exact: O(N) in the window's members, read in pages of
-- 1,000 (about 1 s per million members; see docs/design.md, "Dense ties").
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
  local tally, dense = KEYS[6], KEYS[7]
  redis.call('UNLINK', tally, dense)
  local counts, distinct = {}, {}
  local from = 0
  repeat
    local page = redis.call('ZRANGE', totals, from, from + 999, 'WITHSCORES')
    for p = 2, #page, 2 do
      -- Only positive totals are ranked, so tallied.
      if tonumber(page[p]) > 0 then
        local total = string.format('%d', tonumber(page[p]))
        if not counts[total] then
          counts[total] = 0
          distinct[#distinct + 1] = total
        end
        counts[total] = counts[total] + 1
      end
    end
    from = from + #page / 2
  until #page < 2000
  for first = 1, #distinct, 500 do
    local fields, scored = {}, {}
    for x = first, math.min(first + 499, #distinct) do
      local total = distinct[x]
      fields[#fields + 1] = total
      fields[#fields + 1] = counts[total]
      scored[#scored + 1] = total
      scored[#scored + 1] = total
    end
    redis.call('HSET', tally, unpack(fields))
    redis.call('ZADD', dense, unpack(scored))
  end
end
redis.call('HDEL', board, 'rb_window', 'rb_phase', 'rb_token', 'rb_until', 'rb_fold_member',
  'rb_fold_slot', 'rb_fold_sum', 'building:' .. ARGV[3])
return { 'done' }
