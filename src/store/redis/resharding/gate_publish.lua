-- gate_publish.lua: publish to a shard of a gated sharded board the bars across its
-- shards (docs/design.md, "A review gate on a sharded board"), then apply its gate.
--
-- KEYS[1]    the shard's record      board_{b}
-- KEYS[1+j]  totals of window j      stats_{b} or stats_{b}_<W>   (j = 1..n)
--
-- ARGV[1]    board version the caller expects
-- ARGV[2]    the publication's number (gate_epoch.lua)
-- ARGV[2+j]  window j's bar across the shards: '<total>[ <member>]' (the member on a
--            board ranking ties by position), '-' for none
--
-- Unless the shard took a higher number's bars (board_{b}:bars field 'epoch'), sets
-- board_{b}:bars field <totals>:ext of each window, which gate (lua/review.lua) takes as
-- the bar when it is higher than the shard's own, and the number. Returns 1, or 0 when
-- it took nothing. Error "STALE ..." as write.lua.

local board = KEYS[1]
board_record(board, ARGV[1])
local bars = board .. ':bars'
if tonumber(redis.call('HGET', bars, 'epoch') or '0') > tonumber(ARGV[2]) then return 0 end
local set = { 'epoch', ARGV[2] }
for j = 2, #KEYS do
  set[#set + 1] = KEYS[j] .. ':ext'
  set[#set + 1] = ARGV[j + 1]
end
redis.call('HSET', bars, unpack(set))
gate(board)
return 1
