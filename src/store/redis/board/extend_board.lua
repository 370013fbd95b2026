-- extend_board.lua: add windows, larger than every current one, to a board.
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the new version (the config changes: cached copies must reload)
-- ARGV[3]  every window after the change, seconds, comma-separated, smallest first
-- ARGV[4]  the current largest window, seconds
-- ARGV[5]  the slot length, seconds
-- ARGV[6..]  the added windows, seconds
--
-- Slots at or before the largest window's watermark are gone, or going, from the board:
-- the new windows start there (wm:<W> and done:<W> = that watermark) and note since:<W>,
-- the first slot they hold. A new window is complete once its start reaches that slot.
-- Until a recompute builds it (recompute_swap.lua clears it), it is marked building:<W>.
-- The largest window must have retired every slot it froze (done = wm): a slot it was
-- still consuming would otherwise reach the new windows only in part.
-- Returns 'ok'. Errors: "STALE ..." as in write.lua; "RETIRE ..." when the largest window
-- has frozen slots left to retire (retire, then call again); "RECOMPUTING ..." while a
-- recompute holds its lease.

local board = KEYS[1]
local largest = ARGV[4]
local record = board_record(board, ARGV[1], 'wm:' .. largest, 'done:' .. largest, 'rb_until')
if lease_held(record[5]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed')
end
if record[3] ~= record[4] then
  return redis.error_reply('RETIRE the largest window has frozen slots left to retire')
end
-- The first version names the board's idempotency records (a board made before the
-- field has none: its current version is its first as far as its records go).
redis.call('HSETNX', board, 'incarnation', ARGV[1])
local since = tonumber(record[3]) + tonumber(ARGV[5])
local update = { 'version', ARGV[2], 'windows', ARGV[3] }
for a = 6, #ARGV do
  local w = ARGV[a]
  for _, field in ipairs({ 'wm:' .. w, record[3], 'done:' .. w, record[3], 'since:' .. w, since, 'building:' .. w, 1 }) do
    update[#update + 1] = field
  end
end
redis.call('HSET', board, unpack(update))
return 'ok'
