-- snapshot_append.lua: append, once, leaders given by the caller as a board's snapshots
-- at a slot boundary: how a sharded board takes its snapshots, whose leaders are merged
-- from its shards (the caller has checked that every shard is retired through the
-- boundary; snapshot_take.lua reads one board's own).
--
-- KEYS[1]        board record      board_{b}
-- KEYS[1+i]      stream of the i-th window given, snap_{b}_<W>, i = 1..m
--
-- ARGV[1]        board version the caller expects
-- ARGV[2]        the boundary B, unix seconds
-- ARGV[3]        when the snapshot is taken, unix milliseconds (the caller's clock)
-- then, per window given: how many leaders c, then c pairs member, score, in ranking
-- order
--
-- The policy is the record's field snapshots ('top,keep'), as in snapshot_take.lua. Each
-- entry's ID is B in milliseconds, so a second append for B or one for an older boundary
-- is refused by XADD and skipped here: exactly once. Entry fields as snapshot_take.lua
-- writes them: 'at', ARGV[3], then member, score per leader. The stream is trimmed to the
-- newest `keep` entries.
-- Returns {'off'} without a policy, else {'done', appended}. Error "STALE ..." when the
-- board changed.

local record = board_record(KEYS[1], ARGV[1], 'snapshots')
local policy = record[3]
if not policy then
  return { 'off' }
end
local keep = string.sub(policy, string.find(policy, ',', 1, true) + 1)
local id = ARGV[2] .. '000-0'
local appended, at = 0, 4
for i = 2, #KEYS do
  local count = tonumber(ARGV[at])
  local fields = { 'at', ARGV[3] }
  for k = at + 1, at + 2 * count do
    fields[#fields + 1] = ARGV[k]
  end
  at = at + 1 + 2 * count
  local added = redis.pcall('XADD', KEYS[i], 'MAXLEN', keep, id, unpack(fields))
  -- An error: the stream already holds B or a newer boundary (taken before).
  if not (type(added) == 'table' and added.err) then appended = appended + 1 end
end
return { 'done', appended }
