-- retire_begin.lua: freeze one window up to a cutoff and list the slots it must retire.
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  slot index     slots_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  cutoff: every slot at or before it has left this window
-- ARGV[5]  most slots to list
--
-- Moves the watermark wm:<W> up to the cutoff (writes to those slots now skip this
-- window), then lists up to ARGV[5] slots in (done:<W>, cutoff], oldest first: the slots
-- whose data this window still has to subtract. When there are none, the window is
-- retired through the cutoff: done:<W> := cutoff.
-- Returns {done, slot, slot, ...} (done after the update).
-- Errors: "STALE ..." (board missing, dropped or of another version); "ORDER ..." when the
-- smaller window has not been frozen that far (windows are retired smallest first);
-- "RECOMPUTING ..." while a recompute holds its lease (see recompute_begin.lua).

local board, index = KEYS[1], KEYS[2]
local wm_field, done_field = 'wm:' .. ARGV[2], 'done:' .. ARGV[2]
local prev_field = ARGV[3] ~= '' and ('wm:' .. ARGV[3]) or 'version'
local record = board_record(board, ARGV[1], wm_field, done_field, prev_field, 'rb_until')
if lease_held(record[6]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed; retirement waits')
end
local cutoff = tonumber(ARGV[4])
if ARGV[3] ~= '' and tonumber(record[5]) < cutoff then
  return redis.error_reply('ORDER the smaller window is not frozen up to ' .. ARGV[4])
end
if tonumber(record[3]) < cutoff then
  redis.call('HSET', board, wm_field, ARGV[4])
end

local done = record[4]
local slots = redis.call('ZRANGEBYSCORE', index, '(' .. done, ARGV[4], 'LIMIT', 0, ARGV[5])
if #slots == 0 and tonumber(done) < cutoff then
  redis.call('HSET', board, done_field, ARGV[4])
  done = ARGV[4]
end
local reply = { done }
for i = 1, #slots do reply[i + 1] = slots[i] end
return reply
