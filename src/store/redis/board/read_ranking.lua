-- read_ranking.lua: read a window's ranking in one round trip. Writes nothing.
--
-- KEYS[1]  board record        board_{b}
-- KEYS[2]  slot index          slots_{b}
-- KEYS[3]  the window's totals stats_{b} or stats_{b}_<W>
-- KEYS[4]  dense boards only: the window's distinct totals, dense_{b}[_<W>] (kept by
--          the writes, lua/totals.lua); ranks are then dense: 1 + the number of
--          distinct totals strictly higher (ZCOUNT on it, O(log D))
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the window, seconds (field done:<W>)
-- ARGV[3]  mode: 'top', 'members', 'around', 'ranks' or 'ahead'
-- ARGV[4]  flags, space-separated words, any of: 'position' (the board ranks ties by
--          position: a rank is the 1-based ranking position), 'asc' (top: the offset
--          counts from the bottom; the page is still answered highest first, and the
--          caller reverses it), 'fill' (around: a full page of 2n+1 when the ranking holds
--          that many, shifted at the ends), 'nonzero' (the board ranks every non-zero
--          total, negative ones too; without it only positive totals are ranked), 'all'
--          (a max board: every value is ranked, zero too)
-- ARGV[5]  top: offset;  around, members, ranks: unused
-- ARGV[6]  top: limit;   around: n, entries on each side;  members, ranks: unused
-- ARGV[7]  top, optional: the lowest total of a score range (at least 1 unless
--          'nonzero'), with
-- ARGV[8]  the highest (both inclusive): the page is of the members in the range,
--          offset and limit counted inside it, ranks still ranks in the whole ranking
-- ARGV[7…] ranks, members, around: the members asked for (1 to 1000), in order,
--          duplicates kept
-- ARGV[7…] ahead: probes, pairs total, member ('' for none): see below
--
-- The ranking holds members with a positive total (with 'nonzero': every member of the
-- totals, which never hold a total of zero), highest first; equal totals are
-- ordered by member ascending. Ranks are competition ranks: 1 + the number of members
-- with a strictly higher total (or dense, or positions, as above). Every call is
-- O(log N + page size), whatever the offset and however large the tie groups: pages are
-- read by index (ZREVRANGE) and tie groups cut by a page edge are measured with ZCOUNT
-- (O(log N)), never walked. ZREVRANGE orders equal totals by member descending: in a
-- tie group at reverse ranks [a, b], ranking position p in [a, b] is reverse rank
-- a+b-p, so a group cut by a page edge is read with ZREVRANGE by index and reversed.
-- Every page is a run of consecutive ranking positions (an ascending page is the same
-- run, reversed).
--
-- Returns {first_pending, newest, since, building, ...}: the oldest live slot newer than
-- done:<W>, the newest live slot, and the window's since:<W> and building:<W> marks (see
-- extend_board.lua; false when absent), from which the caller computes the slots covered;
-- then for 'top' the page's runs, highest first; for 'around' per member asked the number
-- of entries of its page (0 for a member without a ranked total), then the page's runs;
-- both end with the runs' texts. A run is entries at consecutive ranking positions
-- holding one total: its first rank, headed by minus its length when it holds more
-- than one, and, in the texts, the total (as Redis prints it) and its members in
-- ranking order. On a board ranking ties by position the ranks of a run go up by one a
-- member; otherwise they are its first rank. The texts of every run are one string,
-- joined by byte 255 (no UTF-8 text holds it): a reply element costs Redis and the
-- service far more than its bytes, and a page of 11 entries is then 2 or 3 elements,
-- not 14;
-- for 'members' the number of ranked members, then per member asked its score, rank and
-- the number of ranked members strictly below it (for its percentile): rank false and
-- none below for a total that is not ranked, rank false and -1 below for a hidden
-- member's total (see hidden_members), false, false, false without a total;
-- for 'ranks' a pair score, rank per member asked (score and false for a total that is
-- not ranked, false, false without a total), each O(log N);
-- for 'ahead' one count per probe: the ranked members ahead of it, those with a
-- strictly higher total and, when the probe names a member (which need not be in the
-- totals), those with the same total and a member before it (bytewise ascending):
-- O(log N), and O(log N log T) with a member in a tie group of T, found by bisection.
-- Error "STALE ..." when the board record is missing, being dropped or of another version.

local board, index, totals, dense = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local flags = {}
if ARGV[4] ~= '' then
  for word in string.gmatch(ARGV[4], '%S+') do flags[word] = true end
end
-- Which totals are ranked (ranked_total's `rule`), and the lowest of them as a ZCOUNT
-- bound: every total (a sum board's are never 0), or the positive ones.
local rule = flags.all and 'all' or flags.nonzero
local floor = rule and '-inf' or '(0'

-- The prelude's rank helpers (ranked_total, rank_of_total), with this call's window and
-- flags.
local function is_ranked(score)
  return ranked_total(score, rule)
end
local function rank_of(score, greater, position)
  return rank_of_total(dense, flags.position, score, greater, position)
end
-- The members with a total higher than `score`, and those holding it: each counted once
-- a call however many of the members asked share it (most members of a large board
-- share a few totals).
local above, held = {}, {}
local function greater_than(score)
  local count = above[score]
  if not count then
    count = redis.call('ZCOUNT', totals, '(' .. score, '+inf')
    above[score] = count
  end
  return count
end
local function holding(score)
  local count = held[score]
  if not count then
    count = redis.call('ZCOUNT', totals, score, score)
    held[score] = count
  end
  return count
end
local record = board_record(board, ARGV[1], 'done:' .. ARGV[2], 'since:' .. ARGV[2], 'building:' .. ARGV[2])
-- Numbers given to redis.call are printed by Redis (sprintf): constants go as strings.
local pending = redis.call('ZRANGEBYSCORE', index, '(' .. record[3], '+inf', 'LIMIT', '0', '1')
local newest = redis.call('ZREVRANGEBYSCORE', index, '+inf', '-inf', 'LIMIT', '0', '1')
local reply = { pending[1] or false, newest[1] or false, record[4] or false, record[5] or false }

-- Appends the run (see above) of list[first], list[first + step], … list[last], each
-- holding `score`, at ranking positions from `from` on, `above` members having a
-- strictly higher total; `entries` counts the entries appended. Its numbers go to the
-- reply, its total and members to `texts`, answered joined (see above).
local entries = 0
local texts = {}
local function append(score, above, from, list, first, last, step)
  local count = (last - first) / step + 1
  if count <= 0 then return end
  if count > 1 then reply[#reply + 1] = -count end
  reply[#reply + 1] = rank_of(score, above, from)
  local t = #texts + 1
  texts[t] = score
  for k = first, last, step do
    t = t + 1
    texts[t] = list[k]
  end
  entries = entries + count
end
-- Appends the members at ranking positions from .. to of the tie group at positions
-- a .. b, holding `score`: ZREVRANGE lists the group at the same indices a .. b in
-- member descending order, so ranking position p is at index a+b-p; one ZREVRANGE,
-- appended from its end.
local function append_group(score, a, b, from, to)
  local found = redis.call('ZREVRANGE', totals, a + b - to, a + b - from)
  append(score, a, from, found, #found, 1, -1)
end

-- Appends the entries at ranking positions offset .. offset+limit-1 to reply (fewer
-- where the ranking ends). One ZREVRANGE reads the page and the entry after it: the
-- ranking ends at the first total not ranked (ZREVRANGE lists highest first), and the
-- entry after the page says whether the page's last tie group goes on past it. Only a
-- tie group cut by a page edge costs more: the first one of a page not at the top,
-- whose start is measured (two ZCOUNTs and a ZREVRANGE), and a last one that goes
-- on, which starts on the page and is read from its start by score (one
-- ZRANGEBYSCORE ... LIMIT 0 k, O(log N + k)). A top-10 page without such a group is
-- that one ZREVRANGE.
local function page(offset, limit)
  if limit <= 0 then return end
  local raw = redis.call('ZREVRANGE', totals, offset, offset + limit, 'WITHSCORES')
  local count = 0
  while count < #raw / 2 and is_ranked(raw[2 * count + 2]) do count = count + 1 end
  local after = count > limit and raw[2 * limit + 2]
  count = math.min(count, limit)
  local i, position = 1, offset
  while i <= count do
    local score = raw[2 * i]
    local j = i
    while j < count and raw[2 * j + 2] == score do j = j + 1 end
    -- This group fills positions position .. final of the page; a group inside the page
    -- starts at position, only the first and the last may reach past the page's edges.
    local final = position + j - i
    local a = position
    if i == 1 and offset > 0 then a = greater_than(score) end
    if a < position then
      append_group(score, a, a + holding(score) - 1, position, final)
    elseif j == count and after == score then
      -- A group that starts on the page: its first members, by score (member order).
      local members = redis.call('ZRANGEBYSCORE', totals, score, score, 'LIMIT', 0, final - position + 1)
      append(score, a, position, members, 1, #members, 1)
    else
      append(score, a, position, raw, 2 * j - 1, 2 * i - 1, -2)
    end
    position = final + 1
    i = j + 1
  end
end

local mode = ARGV[3]
if mode == 'top' then
  local offset, limit = tonumber(ARGV[5]), tonumber(ARGV[6])
  -- The members asked for are a run of consecutive ranking positions: the whole
  -- ranking, or a score range [min, max], which starts after the members above max;
  -- every count is O(log N). A page of the whole ranking from the top needs no count
  -- (page ends it at the last ranked member).
  local first, run = 0, nil
  if ARGV[7] then
    local min, max = ARGV[7], ARGV[8]
    run = redis.call('ZCOUNT', totals, min, max)
    first = redis.call('ZCOUNT', totals, '(' .. max, '+inf')
  elseif flags.asc then
    run = redis.call('ZCOUNT', totals, floor, '+inf')
  end
  if run then limit = math.max(0, math.min(limit, run - offset)) end
  if flags.asc then
    offset = first + run - offset - limit
  else
    offset = first + offset
  end
  page(offset, limit)
  reply[#reply + 1] = table.concat(texts, '\255')
  return reply
end

if mode == 'ranks' then
  for k = 7, #ARGV do
    local score, rank = member_rank(totals, dense, flags.position, rule, ARGV[k])
    reply[#reply + 1] = score
    reply[#reply + 1] = rank
  end
  return reply
end

if mode == 'members' then
  reply[5] = redis.call('ZCOUNT', totals, floor, '+inf')
  for k = 7, #ARGV do
    local score, rank = member_rank(totals, dense, flags.position, rule, ARGV[k])
    local below = score and (rank and redis.call('ZCOUNT', totals, floor, '(' .. score) or 0)
    if not score and hidden_members then
      -- A hidden member (see hidden_members): its total (0 when it holds none here),
      -- none ranked below (-1 says so).
      score = redis.call('ZSCORE', totals .. ':hidden', ARGV[k])
      if not score and redis.call('HEXISTS', hidden_members, ARGV[k]) == 1 then score = '0' end
      below = score and -1
    end
    reply[#reply + 1] = score
    reply[#reply + 1] = rank
    reply[#reply + 1] = below
  end
  return reply
end

if mode == 'ahead' then
  local _, tied_before = tie_order()
  local ranked = redis.call('ZCOUNT', totals, floor, '+inf')
  for k = 7, #ARGV, 2 do
    local total, member = ARGV[k], ARGV[k + 1]
    -- Ranked members are the highest totals: above a total that is not ranked, all.
    local ahead = math.min(redis.call('ZCOUNT', totals, '(' .. total, '+inf'), ranked)
    if member ~= '' and is_ranked(total) then ahead = ahead + tied_before(totals, total, member) end
    reply[#reply + 1] = ahead
  end
  return reply
end

-- around: for each member asked, n ranking positions on each side of its own, fewer at
-- the ends; with fill, 2n+1 positions (or all ranked) shifted to stay inside the ranking.
local n = tonumber(ARGV[6])
-- The ranked members, counted only when a page may reach past its member's tie group
-- (every position up to that group's end is ranked).
local ranked_count
local function ranked()
  ranked_count = ranked_count or redis.call('ZCOUNT', totals, floor, '+inf')
  return ranked_count
end
for k = 7, #ARGV do
  local member = ARGV[k]
  local count_at = #reply + 1
  reply[count_at] = 0
  local score = redis.call('ZSCORE', totals, member)
  if score and is_ranked(score) then
    -- Its ranking position: ZREVRANK orders its tie group by member descending.
    local greater, tied = greater_than(score), holding(score)
    local position = 2 * greater + tied - 1 - redis.call('ZREVRANK', totals, member)
    local offset, limit = math.max(0, position - n), nil
    local known = greater + tied
    if flags.fill then
      limit = 2 * n + 1
      if offset + limit > known then
        limit = math.min(limit, ranked())
        offset = math.min(offset, ranked() - limit)
      end
    else
      local stop = position + n + 1
      limit = (stop > known and math.min(stop, ranked()) or stop) - offset
    end
    -- A page inside the member's own tie group is its members by index, one ZREVRANGE.
    entries = 0
    if offset >= greater and offset + limit <= greater + tied then
      append_group(score, greater, greater + tied - 1, offset, offset + limit - 1)
    else
      page(offset, limit)
    end
    reply[count_at] = entries
  end
end
reply[#reply + 1] = table.concat(texts, '\255')
return reply
