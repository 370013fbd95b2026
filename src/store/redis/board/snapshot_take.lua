-- snapshot_take.lua: append, once, every window's top at a slot boundary to its snapshot
-- stream, when the board asks for snapshots and retirement through the boundary is done.
--
-- KEYS[1]        board record      board_{b}
-- KEYS[1+j]      window j's totals stats_{b}[_<W>], j = 1..n
-- KEYS[1+n+j]    window j's stream snap_{b}_<W>, j = 1..n
--
-- ARGV[1]        board version the caller expects
-- ARGV[2]        the boundary B, unix seconds (the start of the caller's current slot)
-- ARGV[3]        when the snapshot is taken, unix milliseconds (the caller's clock)
-- ARGV[3+j]      window j in seconds, j = 1..n
--
-- The policy is the record's field snapshots ('top,keep'), not the caller's copy of the
-- config, so every replica follows a change at once. Nothing is taken unless every
-- window is retired through B - W (done:<W>): the totals then hold no slot that left
-- the window at B. A window still being built (building:<W>) is skipped. Each entry's ID
-- is B in milliseconds, so a second append for B (another replica, a re-sent call) or
-- for an older boundary is refused by XADD and skipped here: exactly once. Entry fields:
-- 'at', ARGV[3], then member, score for each leader: ranked totals only (positive ones,
-- or every one on a board whose record has rank = 'nonzero' or 'all'), in ranking
-- order (highest first, equal totals by member ascending, as every read orders them; a
-- tie group cut by `top` keeps its smallest members).
-- The stream is trimmed to the newest `keep` entries (exact MAXLEN).
-- Returns {'off'} without a policy, {'wait'} while retirement is behind, else
-- {'done', appended}. Error "STALE ..." when the board changed.

local n = #ARGV - 3
local fields = { 'snapshots' }
for j = 1, n do
  fields[#fields + 1] = 'done:' .. ARGV[3 + j]
  fields[#fields + 1] = 'building:' .. ARGV[3 + j]
end
fields[#fields + 1] = 'rank'
local record = board_record(KEYS[1], ARGV[1], unpack(fields))
-- The lowest ranked total, as a ZREVRANGEBYSCORE bound (a sum board's totals never
-- hold 0).
local rank = record[4 + 2 * n]
local floor = (rank == 'nonzero' or rank == 'all') and '-inf' or '(0'
local policy = record[3]
if not policy then
  return { 'off' }
end
local comma = string.find(policy, ',', 1, true)
local top, keep = string.sub(policy, 1, comma - 1), string.sub(policy, comma + 1)
local boundary = tonumber(ARGV[2])
for j = 1, n do
  if tonumber(record[2 + 2 * j]) < boundary - tonumber(ARGV[3 + j]) then
    return { 'wait' }
  end
end
-- The top `top` ranked totals of `totals` as member, score, ..., in ranking order.
-- ZREVRANGEBYSCORE lists equal totals by member descending: each group is reversed, and
-- the last one, which `top` may cut, is read afresh ascending from its smallest member.
local function leaders(totals)
  local raw = redis.call('ZREVRANGEBYSCORE', totals, '+inf', floor, 'WITHSCORES', 'LIMIT', 0, top)
  local count, out, i = #raw / 2, {}, 1
  while i <= count do
    local score, j = raw[2 * i], i
    while j < count and raw[2 * j + 2] == score do j = j + 1 end
    local members = {}
    if j == count and count == tonumber(top) then
      members = redis.call('ZRANGEBYSCORE', totals, score, score, 'LIMIT', 0, j - i + 1)
    else
      for k = j, i, -1 do members[#members + 1] = raw[2 * k - 1] end
    end
    for _, member in ipairs(members) do
      out[#out + 1] = member
      out[#out + 1] = score
    end
    i = j + 1
  end
  return out
end

local id = ARGV[2] .. '000-0'
local appended = 0
for j = 1, n do
  if not record[3 + 2 * j] then
    local added = redis.pcall('XADD', KEYS[1 + n + j], 'MAXLEN', keep, id, 'at', ARGV[3], unpack(leaders(KEYS[1 + j])))
    -- An error: the stream already holds B or a newer boundary (taken before).
    if not (type(added) == 'table' and added.err) then appended = appended + 1 end
  end
end
return { 'done', appended }
