-- read_hidden.lua: a board's hidden members, or those its review gate holds, and their
-- totals in one window.
--
-- KEYS[1]  board record                  board_{b}
-- KEYS[2]  the window's totals           stats_{b} or stats_{b}_<W> (the hidden
--          members' totals are in KEYS[2] .. ':hidden')
-- KEYS[3]  on a dense board only: the window's distinct totals   dense_{b}[_<W>]
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  'hidden' (the members a moderator hid) or 'held' (those the review gate
--          holds, see lua/review.lua)
-- ARGV[3]  with 'held': 'position' or 'dense' when the board ranks ties so, else ''
--
-- Returns {member, total, ...} for every such member (total '' when it holds none in the
-- window), in no order; with 'held', each followed by the rank it would have among the
-- window's public members and itself ('' when its total is not ranked). Error
-- "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
if not hidden_members then return {} end
local mark = ARGV[2] == 'held' and 'held' or '1'
local marks, members = redis.call('HGETALL', hidden_members), {}
for x = 1, #marks, 2 do
  if marks[x + 1] == mark then members[#members + 1] = marks[x] end
end
local totals = KEYS[2]
local rule = rank_rule(redis.call('HGET', KEYS[1], 'rank'))
local shadow, reply = totals .. ':hidden', {}
local _, tied_before = tie_order()
for from = 1, #members, 1000 do
  local chunk = { unpack(members, from, math.min(from + 999, #members)) }
  local held = redis.call('ZMSCORE', shadow, unpack(chunk))
  for i, member in ipairs(chunk) do
    reply[#reply + 1] = member
    reply[#reply + 1] = held[i] or ''
    if mark == 'held' then
      local rank = ''
      if held[i] and ranked_total(held[i], rule) then
        local above = ARGV[3] == 'dense' and KEYS[3] or totals
        rank = redis.call('ZCOUNT', above, '(' .. held[i], '+inf') + 1
        if ARGV[3] == 'position' then rank = rank + tied_before(totals, held[i], member) end
      end
      reply[#reply + 1] = rank
    end
  end
end
return reply
