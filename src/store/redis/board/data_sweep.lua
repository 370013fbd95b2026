-- data_sweep.lua: one step of a sweep of member data: of the next HSCAN step of the
-- board's data, the members that hold no total in the largest window lose their data.
-- Run after a recompute of the largest window put its rebuilt totals in place: a member
-- whose total there was drift left it by the swap, and its data goes with it, as it does
-- whenever that total goes (data_set.lua).
--
-- KEYS[1]  board record                board_{b}
-- KEYS[2]  the largest window's totals stats_{b} or stats_{b}_<W>
-- KEYS[3]  member data                 data_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the HSCAN cursor to go on from ('0': the start)
-- ARGV[3]  HSCAN COUNT
--
-- A write sets a member's data only where the member holds a total, checked in its own
-- atomic step, so a step never deletes the data of a member that holds one, and a step
-- sent again deletes nothing more. Returns {next cursor ('0' when done), data deleted}.
-- Error "STALE ..." as in write.lua.

board_record(KEYS[1], ARGV[1])
local step = redis.call('HSCAN', KEYS[3], ARGV[2], 'COUNT', ARGV[3])
local flat, members = step[2], {}
for x = 1, #flat, 2 do members[#members + 1] = flat[x] end
local gone = {}
if #members > 0 then
  local scores = held_scores(KEYS[2], members)
  for i, member in ipairs(members) do
    if not scores[i] then gone[#gone + 1] = member end
  end
  if #gone > 0 then redis.call('HDEL', KEYS[3], unpack(gone)) end
end
return { step[1], #gone }
