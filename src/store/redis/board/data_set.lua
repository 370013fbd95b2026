-- data_set.lua: set member data, each where the member holds a total in the largest
-- window, checked in the same atomic step (so no retirement comes between the check and
-- the set).
--
-- KEYS[1]  board record                board_{b}
-- KEYS[2]  the largest window's totals stats_{b} or stats_{b}_<W>
-- KEYS[3]  member data                 data_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2k], ARGV[2k+1], k = 1..  a member and its data (compact JSON text); a member
--          named twice keeps the later data
--
-- Data lives as long as the member's total in the largest window, hidden or not (see
-- hidden_members): the scripts that take that total to 0 (add_total, bulk_add in the
-- prelude; retire_swap.lua) delete it.
-- Returns per pair 1 (set) or 0 (no total: nothing kept). Error "STALE ..." as in
-- write.lua. Idempotent: setting the same data again changes nothing.

board_record(KEYS[1], ARGV[1])
local totals, data = KEYS[2], KEYS[3]
local set, answers, members = {}, {}, {}
for x = 2, #ARGV, 2 do members[#members + 1] = ARGV[x] end
local held = held_scores(totals, members)
for x = 2, #ARGV, 2 do
  if held[x / 2] then
    set[#set + 1] = ARGV[x]
    set[#set + 1] = ARGV[x + 1]
    answers[#answers + 1] = 1
  else
    answers[#answers + 1] = 0
  end
end
if #set > 0 then redis.call('HSET', data, unpack(set)) end
return answers
