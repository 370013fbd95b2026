-- hide.lua: hide members of a board (of any aggregate), or show them again, each in every
-- window at once.
--
-- KEYS[1]          board record            board_{b}
-- KEYS[1+j]        totals of window j      stats_{b} or stats_{b}_<W>   (j = 1..n)
-- then, on a dense board only, per window j: its tally and distinct totals
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  n, the board's windows
-- ARGV[3]  'hide' or 'show'
-- ARGV[4]  '1' when the board's values are all ranked and tallied (a max, min or latest
--          board: retally_all), else '' (a sum board's positive totals: retally)
-- ARGV[5..] the members
--
-- A hidden member is a field of board_{b}:hidden, counted by the record's 'hidden', and
-- its total in each window lives in <totals>:hidden instead of the totals (never in the
-- tally), where writes, retirement and removal keep it exact (add_total, bulk_add; see
-- hidden_members in the prelude). Hide moves each window's total there; show moves it
-- back. Returns how many members changed; the others were hidden already (hide) or not
-- hidden (show). Error "STALE ..." as write.lua.

local board, n, hide = KEYS[1], tonumber(ARGV[2]), ARGV[3] == 'hide'
local tallied = ARGV[4] == '1' and retally_all or retally
board_record(board, ARGV[1])
local hidden = board .. ':hidden'

local keys = { unpack(KEYS, 2, 1 + n) }
local function tally(j) return KEYS[1 + n + 2 * j - 1], KEYS[1 + n + 2 * j] end

-- Hides or shows `member`; answers 1 when it changed, and 1 more when the count of hidden
-- members did (a member held for review, see gate, is out of the ranking already: hiding
-- it only marks it hidden; showing it does nothing).
local function set_hidden(member)
  local was = redis.call('HGET', hidden, member)
  if hide then
    if was == '1' then return 0, 0 end
    redis.call('HSET', hidden, member, '1')
    if was then return 1, 0 end
  else
    if was ~= '1' then return 0, 0 end
    redis.call('HDEL', hidden, member)
  end
  move_totals(keys, member, hide, tally, tallied)
  return 1, 1
end

local changed, counted = 0, 0
for i = 5, #ARGV do
  local member_changed, member_counted = set_hidden(ARGV[i])
  changed, counted = changed + member_changed, counted + member_counted
end
if counted > 0 then
  unquiet(board)
  redis.call('HINCRBY', board, 'hidden', hide and counted or -counted)
  hidden_members = hidden
end
gate(board)
record_changes(board, hide and 'hide' or 'show')
return changed
