-- review_set.lua: set, change or clear a board's review gate (lua/review.lua).
--
-- KEYS[1]    board record          board_{b}
-- KEYS[1+j]  totals of window j    stats_{b} or stats_{b}_<W>   (j = 1..n)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the gate's K ('above_rank'), or '' to clear it
--
-- Every held member goes back to the ranking, then, with a K, gate holds afresh every
-- unreviewed member at or over the new bars. Returns how many members are held after.
-- Error "STALE ..." as write.lua.

local board = KEYS[1]
board_record(board, ARGV[1])
local hidden, keys = board .. ':hidden', { unpack(KEYS, 2) }
local tally, tallied = gate_tallies(unpack(redis.call('HMGET', board, 'ties', 'rank')))
local marks, let_go = redis.call('HGETALL', hidden), 0
for x = 1, #marks, 2 do
  if marks[x + 1] == 'held' then
    redis.call('HDEL', hidden, marks[x])
    move_totals(keys, marks[x], false, tally, tallied)
    let_go = let_go + 1
  end
end
unquiet(board)
if let_go > 0 then redis.call('HINCRBY', board, 'hidden', -let_go) end
-- The bars kept go; those published across a sharded board's shards stay.
redis.call('HDEL', board .. ':bars', unpack(keys))
set_field(board, 'review', ARGV[2], '')
review_rank = tonumber(ARGV[2]) or false
gate(board, true)
record_changes(board, 'hide')
if not review_rank then return 0 end
local held = 0
for _, mark in ipairs(redis.call('HVALS', hidden)) do
  if mark == 'held' then held = held + 1 end
end
return held
