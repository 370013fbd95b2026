-- retire_max.lua: retire one chunk of a frozen slot from one window of a max board
-- (docs/design.md, "Max and min boards").
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  slot index                      slots_{b}
-- KEYS[3]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[4]  the slot's hash                 slot_{b}_<ts>: member -> its highest value
-- KEYS[5]  peaks                           peaks_{b}
-- KEYS[6]  member data                     data_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  HSCAN cursor, or '0': from where the last call on this slot and window left
--          off (the record's field 'mxc:<W>' = '<slot>:<cursor>', kept between calls so
--          that a pass that stopped, or another retirer, goes on from there), else from
--          the start
-- ARGV[6]  HSCAN COUNT of this call
-- ARGV[7]  '1' for the largest window, else ''
--
-- Each member the HSCAN step returns held a value in the slot, so its value in this
-- window may have come from it: the window's value becomes the first pair of its peak
-- list past the slot (ZADD), or, when none is left, the member leaves the window (ZREM;
-- the largest window also deletes its member data). The largest window also trims the
-- peak list to the pairs past the slot. The new value is a function of the peak list
-- alone, so a step applied twice (a re-sent call, two retirers) sets what it set once.
-- A member whose value came from another slot is not in this slot's hash: untouched.
-- After the last step the window is retired through the slot (done:<W>), and the
-- largest window drops the slot's hash and its index entry. Every cursor a call starts
-- from was answered by a step that ran, so a window is marked retired through the slot
-- only once some chain of steps has scanned its hash from start to end.
-- Returns {cursor, members re-evaluated, members that left}; cursor is 'done' when the
-- window is retired through the slot (also when it already was).
-- Errors: "STALE ...", "ORDER ..." (the slot is not frozen, or the smaller window has not
-- retired it).

local board, index, totals, slot_key, peaks, data = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local prev_field = ARGV[3] ~= '' and ('done:' .. ARGV[3]) or 'version'
local cursor_field = 'mxc:' .. ARGV[2]
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[2], 'done:' .. ARGV[2], prev_field, cursor_field)
local slot = tonumber(ARGV[4])
if tonumber(record[4]) >= slot then return { 'done', 0, 0 } end
if tonumber(record[3]) < slot then
  return redis.error_reply('ORDER the slot is not frozen out of this window')
end
if ARGV[3] ~= '' and tonumber(record[5]) < slot then
  return redis.error_reply('ORDER the smaller window has not retired the slot')
end
local largest = ARGV[7] == '1'

local cursor = ARGV[5]
if cursor == '0' and record[6] then
  local kept_slot, kept = string.match(record[6], '^(%-?%d+):(%d+)$')
  if kept_slot == ARGV[4] then cursor = kept end
end
local scan = redis.call('HSCAN', slot_key, cursor, 'COUNT', ARGV[6])
local handled, left = 0, 0
local flat = scan[2]
for x = 1, #flat, 2 do
  local member = flat[x]
  local list = redis.call('HGET', peaks, member)
  local value = peaks_after(list, slot)
  if value then
    redis.call('ZADD', totals, value, member)
  elseif redis.call('ZREM', totals, member) == 1 then
    left = left + 1
    if largest then redis.call('HDEL', data, member) end
  end
  if largest and list then
    local kept = peaks_trim(list, slot)
    if kept == '' then
      redis.call('HDEL', peaks, member)
    elseif kept ~= list then
      redis.call('HSET', peaks, member, kept)
    end
  end
  handled = handled + 1
end
if scan[1] ~= '0' then
  redis.call('HSET', board, cursor_field, ARGV[4] .. ':' .. scan[1])
  return { scan[1], handled, left }
end
redis.call('HSET', board, 'done:' .. ARGV[2], ARGV[4])
redis.call('HDEL', board, cursor_field)
if largest then
  redis.call('DEL', slot_key)
  redis.call('ZREM', index, ARGV[4])
end
return { 'done', handled, left }
