-- read_hidden.lua: a board's hidden members and their totals in one window.
--
-- KEYS[1]  board record                  board_{b}
-- KEYS[2]  the window's totals           stats_{b} or stats_{b}_<W> (the hidden
--          members' totals are in KEYS[2] .. ':hidden')
--
-- ARGV[1]  board version the caller expects
--
-- Returns {member, total, ...} for every member of board_{b}:hidden (total '' when it
-- holds none in the window), in no order. Error "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
if not hidden_members then return {} end
local members = redis.call('HKEYS', hidden_members)
local shadow, reply = KEYS[2] .. ':hidden', {}
for from = 1, #members, 1000 do
  local chunk = { unpack(members, from, math.min(from + 999, #members)) }
  local totals = redis.call('ZMSCORE', shadow, unpack(chunk))
  for i, member in ipairs(chunk) do
    reply[#reply + 1] = member
    reply[#reply + 1] = totals[i] or ''
  end
end
return reply
