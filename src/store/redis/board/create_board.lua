-- create_board.lua: create a board record, or return the existing one.
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  version of the new incarnation
-- ARGV[2]  slot length, seconds
-- ARGV[3]  windows, seconds, comma-separated, smallest first
-- ARGV[4]  alignment offset, seconds
-- ARGV[5]  creation time, unix milliseconds
-- ARGV[6]  how ties rank: 'competition' or 'dense' (field ties)
-- ARGV[7]  the layout asked for, 'plain' or 'compact' (field layout), or '' for the
--          store's default (no field: write.lua is told the default with each call)
-- ARGV[8]  which totals are ranked: 'positive', 'nonzero' or 'all' (field rank, written
--          unless 'positive': a record without it ranks positive totals)
-- ARGV[9]  what the board keeps: 'sum', 'max' or 'min' (field aggregate, written unless
--          'sum': a record without it sums; scripts keep a min board as a max board of
--          negated values)
-- ARGV[10] how many shards the board's members are spread over (field shards, written
--          unless 1: a record without it is one shard's; the other shards are boards of
--          their own, see src/store/sharded)
-- ARGV[11] the per-member contributor cap (field per_contributor_member), or '' for none
-- ARGV[12] the contributor budget (field per_contributor), or '' for none
-- ARGV[12+2j-1], ARGV[12+2j], j = 1..n   window j in seconds, and its cutoff at creation
--          (the initial watermark wm:<W> and retired-through mark done:<W>)
--
-- abs_sum, the bound on stored magnitudes that lets write.lua skip range checks, starts at 0;
-- plain_slots ('1': no slot of the board has a geometry yet) is set, for retire_small.lua.
-- Returns {1, version, slot, windows, offset, created, ties, false, layout, rank,
-- aggregate, shards, (six false), per_contributor_member, per_contributor} when created,
-- or {0, ...} with the stored values (snapshots policy, layout, rank, aggregate, shards,
-- resharding, incarnation, pins, review, watch, changes_kept, per_contributor_member,
-- per_contributor) when the board
-- already exists
-- (the caller compares the configs). A snapshots policy is set by set_snapshots.lua, a
-- review gate by review_set.lua, watches by watch_set.lua.
-- Error "DROPPING ..." while an earlier incarnation is being dropped, "KIND ..." when a
-- trending board of that name exists.
-- The registry of boards is a separate key, updated by the caller with its own command.

local board = KEYS[1]
local existing = redis.call('HMGET', board, 'version', 'slot', 'windows', 'offset', 'created_ms', 'dropping', 'ties', 'kind', 'snapshots', 'layout', 'rank', 'aggregate', 'shards', 'resharding', 'incarnation', 'pins', 'review', 'watch', 'changes_kept', 'per_contributor_member', 'per_contributor')
if existing[6] then
  return redis.error_reply('DROPPING the board is being dropped; retry when that finishes')
end
if existing[8] == 'trending' then
  return redis.error_reply('KIND trending the board is a trending board')
end
if existing[1] then
  return { 0, existing[1], existing[2], existing[3], existing[4], existing[5], existing[7] or false, existing[9] or false, existing[10] or false, existing[11] or false, existing[12] or false, existing[13] or false, existing[14] or false, existing[15] or false, existing[16] or false, existing[17] or false, existing[18] or false, existing[19] or false, existing[20] or false, existing[21] or false }
end
-- The fields scripts read most come first (a record is one listpack, which Redis reads
-- from its start for each field asked): the version, 'quiet' (see lua/base.lua), each
-- window's marks (every write and retirement), abs_sum and plain_slots.
local record = { 'version', ARGV[1], 'quiet', '1' }
for a = 13, #ARGV, 2 do
  record[#record + 1] = 'wm:' .. ARGV[a]
  record[#record + 1] = ARGV[a + 1]
  record[#record + 1] = 'done:' .. ARGV[a]
  record[#record + 1] = ARGV[a + 1]
end
for _, field in ipairs({ 'abs_sum', '0', 'plain_slots', '1', 'incarnation', ARGV[1],
    'slot', ARGV[2], 'windows', ARGV[3], 'offset', ARGV[4], 'created_ms', ARGV[5],
    'ties', ARGV[6] }) do
  record[#record + 1] = field
end
if ARGV[7] ~= '' then
  record[#record + 1] = 'layout'
  record[#record + 1] = ARGV[7]
end
if ARGV[8] ~= 'positive' then
  record[#record + 1] = 'rank'
  record[#record + 1] = ARGV[8]
end
if ARGV[9] ~= 'sum' then
  record[#record + 1] = 'aggregate'
  record[#record + 1] = ARGV[9]
end
if ARGV[10] ~= '1' then
  record[#record + 1] = 'shards'
  record[#record + 1] = ARGV[10]
end
if ARGV[11] ~= '' then
  record[#record + 1] = 'per_contributor_member'
  record[#record + 1] = ARGV[11]
end
if ARGV[12] ~= '' then
  record[#record + 1] = 'per_contributor'
  record[#record + 1] = ARGV[12]
end
redis.call('HSET', board, unpack(record))
return { 1, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], false, ARGV[7] ~= '' and ARGV[7] or false,
  ARGV[8] ~= 'positive' and ARGV[8] or false, ARGV[9] ~= 'sum' and ARGV[9] or false,
  ARGV[10] ~= '1' and ARGV[10] or false, false, false, false, false, false, false,
  ARGV[11] ~= '' and ARGV[11] or false, ARGV[12] ~= '' and ARGV[12] or false }
