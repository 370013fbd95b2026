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

local function set_hidden(member)
  local was = redis.call('HEXISTS', hidden, member) == 1
  if was == hide then return 0 end
  if hide then
    redis.call('HSET', hidden, member, '1')
  else
    redis.call('HDEL', hidden, member)
  end
  for j = 1, n do
    local totals, shadow = KEYS[1 + j], KEYS[1 + j] .. ':hidden'
    local from, to = totals, shadow
    if not hide then from, to = shadow, totals end
    local total = redis.call('ZSCORE', from, member)
    if total then
      redis.call('ZREM', from, member)
      redis.call('ZADD', to, total, member)
      local tally, dense = KEYS[1 + n + 2 * j - 1], KEYS[1 + n + 2 * j]
      if tally then
        if hide then tallied(tally, dense, total, nil) else tallied(tally, dense, nil, total) end
      end
    end
  end
  return 1
end

local changed = 0
for i = 5, #ARGV do changed = changed + set_hidden(ARGV[i]) end
if changed > 0 then redis.call('HINCRBY', board, 'hidden', hide and changed or -changed) end
return changed
