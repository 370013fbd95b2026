-- review_decide.lua: a moderator's decision on a member of a board (lua/review.lua).
--
-- KEYS[1]    board record          board_{b}
-- KEYS[1+j]  totals of window j    stats_{b} or stats_{b}_<W>   (j = 1..n)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  'allow' or 'deny'
-- ARGV[3]  the member
--
-- Allow puts the member in board_{b}:allowed: held, it goes back to the ranking (a
-- member a moderator hid stays hidden). Deny takes it out of the allowed set and hides
-- it (hide.lua's mark '1'; held, it only changes mark). Then gate. Returns 1 when the
-- decision changed anything, else 0. Error "STALE ..." as write.lua.

local board, member = KEYS[1], ARGV[3]
board_record(board, ARGV[1])
local hidden, allowed = board .. ':hidden', board .. ':allowed'
local keys = { unpack(KEYS, 2) }
local tally, tallied = gate_tallies(unpack(redis.call('HMGET', board, 'ties', 'rank')))
local mark = redis.call('HGET', hidden, member)
local changed
if ARGV[2] == 'allow' then
  changed = redis.call('SADD', allowed, member)
  if mark == 'held' then
    redis.call('HDEL', hidden, member)
    unquiet(board)
    redis.call('HINCRBY', board, 'hidden', -1)
    move_totals(keys, member, false, tally, tallied)
    changed = 1
  end
else
  changed = redis.call('SREM', allowed, member)
  if mark ~= '1' then
    redis.call('HSET', hidden, member, '1')
    if not mark then
      unquiet(board)
      redis.call('HINCRBY', board, 'hidden', 1)
      move_totals(keys, member, true, tally, tallied)
      hidden_members = hidden
    end
    changed = 1
  end
end
gate(board)
record_changes(board, ARGV[2] == 'allow' and 'show' or 'hide')
return changed
