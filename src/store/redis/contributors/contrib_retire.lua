-- contrib_retire.lua: retire one chunk of a frozen slot's contributions from one
-- window (lua/contributors.lua), before retire_chunk.lua retires its member values.
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[3]  the slot's stage for this window, j (its contributions are <stage>:c)
-- KEYS[4]  member data                     data_{b} (the largest window's totals only)
-- KEYS[5]  slot index                      slots_{b}
-- KEYS[6]  the slot's next stage, j+1; absent for the largest window
-- then, on a dense board (ARGV[8] = 'dense'): this window's tally and distinct totals
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  HSCAN cursor ('0' to start)
-- ARGV[6]  most pairs to handle in this call
-- ARGV[7]  time budget of this call, microseconds: it stops before an HSCAN step (~50
--          pairs) that would likely overrun it at the pace of its slowest step so far
-- ARGV[8]  'dense' on a dense board, else absent
--
-- Each pair (by, member) of the stage leaves the window: its admitted sum there
-- (board_{b}:ctr:<by>, field '<W>\n<member>'; on window 1 one slot long, the sum of its
-- stage-1 parts in the slots window 1 has not retired, contrib_derived) drops by the
-- pair's value and the member's total by what that changes of its counted part; its
-- admitted and refused parts go on to the next stage's contributions (which the next
-- window retires); in the last stage, what each contributor's admitted likes in
-- the slot used of the budget leaves its field u; the contributor's index counts follow
-- (contrib_index). All in this call, then the field is deleted: a chunk
-- is applied whole or not at all, so a retirer that dies, or two at once, never retire
-- a pair twice nor skip one. The stage is frozen (the window froze the slot and the
-- smaller window finished it), so a full HSCAN from 0 sees every pair.
-- When the largest window finishes a slot, the slot's per-member history (<stage 1>:cm)
-- goes.
-- Returns {cursor, pairs handled}; cursor is 'done' when the stage has no pair left.
-- Errors: "STALE ...", "ORDER ..." (slot not frozen, or the smaller window not finished).

local board, totals, stage, data_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tally, dense = nil, nil
if ARGV[8] == 'dense' then tally, dense = KEYS[#KEYS - 1], KEYS[#KEYS] end
local next_stage = (#KEYS - (tally and 2 or 0) == 6) and KEYS[6] or nil
local data = (not next_stage) and data_key or nil
local prev_field = ARGV[3] ~= '' and ('done:' .. ARGV[3]) or 'version'
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[2], prev_field, 'per_contributor_member',
  'ctr_q', 'slot', 'done:' .. ARGV[2])
local slot = tonumber(ARGV[4])
if tonumber(record[3]) < slot then
  return redis.error_reply('ORDER slot ' .. ARGV[4] .. ' is not frozen for window ' .. ARGV[2])
end
if ARGV[3] ~= '' and tonumber(record[4]) < slot then
  return redis.error_reply('ORDER the smaller window has not retired slot ' .. ARGV[4])
end
local cap = tonumber(record[5])
-- Each contributor's hold (contrib_flag), read once a call; false: none.
local flags = {}
local pairs_key = stage .. ':c'
local next_pairs = next_stage and (next_stage .. ':c') or nil
-- Window 1 one slot long: the slots it has not retired (this one included) and what
-- their stage keys start with.
local first_live = ARGV[3] == ''
  and contrib_first_live(KEYS[5], record[7], ARGV[2], record[8])
local prefix = string.sub(stage, 1, #stage - #ARGV[4])

local cursor, handled, max, budget = ARGV[5], 0, tonumber(ARGV[6]), tonumber(ARGV[7])
local started, elapsed, slowest = now_us(), 0, 0
repeat
  local before = elapsed
  local scan = redis.call('HSCAN', pairs_key, cursor, 'COUNT', 50)
  local found = scan[2]
  for p = 1, #found, 2 do
    local field, value = found[p], tonumber(found[p + 1])
    local by, member, refused = contrib_field(field)
    local ctr = board .. ':ctr:' .. by
    if not member then
      -- What by's admitted likes in the slot use (the last stage only).
      contrib_add(ctr, 'u', -value)
    elseif not refused then
      if flags[by] == nil then flags[by] = contrib_flag(ctr, record[6]) or false end
      local change = contrib_leave(ctr, ARGV[2], by, member, value, cap, flags[by] or nil,
        first_live, prefix)
      if change ~= 0 then
        add_total(totals, member, string.format('%d', change), tally, dense, data)
      end
    end
    redis.call('HDEL', pairs_key, field)
    -- The index counts the field deleted here and the one it makes or meets next.
    local made = -1
    if next_pairs and member then made = made + contrib_stage_add(next_pairs, field, value) end
    contrib_index(ctr, contrib_index_field(ARGV[4], member), made)
    handled = handled + 1
  end
  cursor = scan[1]
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
until cursor == '0' or handled >= max or elapsed + slowest > budget
gate(board)

if redis.call('EXISTS', pairs_key) == 1 then
  if cursor == '0' then
    -- A scan from 0 deleted every pair it saw: pairs left mean someone writes this stage.
    return redis.error_reply('ORDER contributions ' .. pairs_key .. ' still have pairs after a full scan')
  end
  return { cursor, handled }
end
if not next_stage then
  -- The history is beside stage 1: this stage's key less its '_<k>' (none on window 1).
  local first = ARGV[3] == '' and stage or string.gsub(stage, '_%d+$', '')
  redis.call('DEL', first .. ':cm')
end
record_changes(board, 'retire', nil, (slot + tonumber(ARGV[2])) * 1000)
return { 'done', handled }
