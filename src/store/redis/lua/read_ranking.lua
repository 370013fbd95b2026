-- read_ranking.lua: read a window's ranking in one round trip. Writes nothing.
--
-- KEYS[1]  board record        board_{b}
-- KEYS[2]  slot index          slots_{b}
-- KEYS[3]  the window's totals stats_{b} or stats_{b}_<W>
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the window, seconds (field done:<W>)
-- ARGV[3]  mode: 'top', 'member' or 'around'
-- ARGV[4]  top: offset;  member, around: the member
-- ARGV[5]  top: limit;   around: n, entries on each side;  member: unused
--
-- The ranking holds members with a positive total, highest first; equal totals are
-- ordered by member ascending (Redis orders them descending in ZREVRANGE, so tie groups
-- cut by the page edges are re-read in ascending order with ZRANGEBYSCORE). Ranks are
-- competition ranks: 1 + the number of members with a strictly higher total.
--
-- Returns {first_pending, newest, since, building, ...}: the oldest live slot newer than
-- done:<W>, the newest live slot, and the window's since:<W> and building:<W> marks (see
-- extend_board.lua; false when absent), from which the caller computes the slots covered;
-- then for 'top' and 'around' triples rank, member, score (score as Redis prints it);
-- for 'member' score and rank, or nothing when the member has no positive total.
-- Error "STALE ..." when the board record is missing, being dropped or of another version.

local board, index, totals = KEYS[1], KEYS[2], KEYS[3]
local record = redis.call('HMGET', board, 'version', 'dropping', 'done:' .. ARGV[2], 'since:' .. ARGV[2], 'building:' .. ARGV[2])
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end
local pending = redis.call('ZRANGEBYSCORE', index, '(' .. record[3], '+inf', 'LIMIT', 0, 1)
local newest = redis.call('ZREVRANGEBYSCORE', index, '+inf', '-inf', 'LIMIT', 0, 1)
local reply = { pending[1] or false, newest[1] or false, record[4] or false, record[5] or false }

-- Appends the entries at positions offset .. offset+limit-1 of the ranking to reply.
local function page(offset, limit)
  local raw = redis.call('ZREVRANGEBYSCORE', totals, '+inf', '(0', 'WITHSCORES', 'LIMIT', offset, limit + 1)
  local fetched = #raw / 2
  local count = math.min(fetched, limit)
  local cut_at_end = fetched > limit and raw[2 * limit + 2] == raw[2 * limit]
  local i, position = 1, offset
  while i <= count do
    local score = raw[2 * i]
    local j = i
    while j < count and raw[2 * j + 2] == score do j = j + 1 end
    local size = j - i + 1
    local group_start = position
    if i == 1 then
      group_start = redis.call('ZCOUNT', totals, '(' .. score, '+inf')
    end
    local members
    if (i == 1 and group_start < position) or (j == count and cut_at_end) then
      members = redis.call('ZRANGEBYSCORE', totals, score, score, 'LIMIT', position - group_start, size)
    else
      members = {}
      for k = j, i, -1 do members[#members + 1] = raw[2 * k - 1] end
    end
    for _, member in ipairs(members) do
      reply[#reply + 1] = group_start + 1
      reply[#reply + 1] = member
      reply[#reply + 1] = score
    end
    position = position + size
    i = j + 1
  end
end

local mode = ARGV[3]
if mode == 'top' then
  page(tonumber(ARGV[4]), tonumber(ARGV[5]))
  return reply
end

local member = ARGV[4]
local score = redis.call('ZSCORE', totals, member)
if not score or tonumber(score) <= 0 then
  return reply
end
local greater = redis.call('ZCOUNT', totals, '(' .. score, '+inf')
if mode == 'member' then
  reply[5] = score
  reply[6] = greater + 1
  return reply
end

-- around: the member's position in ranking order, from its ZREVRANK (which orders equal
-- totals by member descending).
local n = tonumber(ARGV[5])
local tied = redis.call('ZCOUNT', totals, score, score)
local revrank = redis.call('ZREVRANK', totals, member)
local position = greater + (tied - 1 - (revrank - greater))
local offset = math.max(0, position - n)
page(offset, position - offset + n + 1)
return reply
