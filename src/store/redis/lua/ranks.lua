-- ranks.lua: a member's rank in a window, and the standing a write answers.

-- Ranks (read_ranking.lua, write.lua). A window's ranking holds the members of its
-- totals zset with a ranked total: positive ones, or with `nonzero` (a net-vote board)
-- every one (the totals never hold a zero), highest first, equal totals by member
-- ascending. A rank is 1 + the number of members with a strictly higher total
-- (competition), 1 + the number of distinct totals strictly higher (dense: ZCOUNT on the
-- window's distinct totals `dense`, see retally), or the 1-based ranking position
-- (`position`). Each is O(log N).

-- The tie order's helpers, made when called (each local function of a script's source is
-- a closure made anew on every call, so a script makes these only where it needs them):
-- bytes_before(a, b), whether string a sorts before b byte by byte, as the ranking orders
-- equal totals (Lua's < follows the server's locale); and tied_before(totals, total,
-- member), how many members of `totals` holding `total` sort before `member` (the group
-- sits at ascending ranks first .. first+tied-1 in member order: a bisection, O(log N log
-- T)).
local function tie_order()
  local function bytes_before(a, b)
    for i = 1, math.min(#a, #b) do
      local x, y = string.byte(a, i), string.byte(b, i)
      if x ~= y then return x < y end
    end
    return #a < #b
  end
  local function tied_before(totals, total, member)
    local tied = redis.call('ZCOUNT', totals, total, total)
    local first = redis.call('ZCOUNT', totals, '-inf', '(' .. total)
    local lo, hi = 0, tied
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local at = redis.call('ZRANGE', totals, first + mid, first + mid)[1]
      if bytes_before(at, member) then lo = mid + 1 else hi = mid end
    end
    return lo
  end
  return bytes_before, tied_before
end

-- Whether `score` (a total, as Redis prints it) is ranked: `rule` is 'all' (a max
-- board: every value), true (every non-zero total) or false/nil (positive ones).
local function ranked_total(score, rule)
  if rule == 'all' then return true end
  if rule then return tonumber(score) ~= 0 end
  return tonumber(score) > 0
end

-- The rank of `score`, `greater` members having a strictly higher total, held by the
-- member at ranking position `at` (0-based; read only when `position`).
local function rank_of_total(dense, position, score, greater, at)
  if position then return at + 1 end
  if dense then return redis.call('ZCOUNT', dense, '(' .. score, '+inf') + 1 end
  return greater + 1
end

-- The 0-based ranking position in `totals` of `member`, whose total is `score`,
-- `greater` members having a strictly higher one: from its ZREVRANK, which orders equal
-- totals by member descending. Then the number of members holding `score`.
local function position_in(totals, member, score, greater)
  local tied = redis.call('ZCOUNT', totals, score, score)
  local revrank = redis.call('ZREVRANK', totals, member)
  return greater + (tied - 1 - (revrank - greater)), tied
end

-- `member`'s total in `totals` (as Redis prints it; false without one) and its rank
-- (false when the total is not ranked), the board ranking as `rule` says (ranked_total).
local function member_rank(totals, dense, position, rule, member)
  local score = redis.call('ZSCORE', totals, member)
  if not score or not ranked_total(score, rule) then return score or false, false end
  local greater = redis.call('ZCOUNT', totals, '(' .. score, '+inf')
  return score, rank_of_total(dense, position, score, greater,
    position and position_in(totals, member, score, greater))
end

-- The rank `member` would have in `totals` (distinct totals `dense`) with the total
-- `score` (a number) instead of `real` (what it holds, false without one): as
-- member_rank's, without the member itself where it holds a higher total (false when
-- `score` is not ranked).
local function rank_at(totals, dense, position, rule, member, score, real)
  if score == 0 or not ranked_total(score, rule) then return false end
  local text = string.format('%d', score)
  local above = real and tonumber(real) > score
  local greater = redis.call('ZCOUNT', totals, '(' .. text, '+inf') - (above and 1 or 0)
  if position then
    local _, tied_before = tie_order()
    return greater + tied_before(totals, text, member) + 1
  end
  if dense then
    local alone = above and redis.call('ZCOUNT', totals, real, real) == 1
    return redis.call('ZCOUNT', dense, '(' .. text, '+inf') + 1 - (alone and 1 or 0)
  end
  return greater + 1
end

-- The standing of a write that answers it (write.lua, write_max.lua): appends to `into`,
-- for each of `members` and each window position j of `windows`, the member's total in
-- KEYS[totals + j] (0 without one) and its rank there (false when not ranked; dense: by
-- the distinct totals KEYS[dense + 2j] when `dense` is given), the board ranking as
-- `rule` says (ranked_total); with `extra` (write.lua's, for a quarantined writer), the
-- total and rank it would have with extra(member, j) more.
local function read_standing(into, members, windows, totals, dense, position, rule, extra)
  for _, member in ipairs(members) do
    for _, j in ipairs(windows) do
      local distinct = dense and KEYS[dense + 2 * j] or nil
      local score, ranked = member_rank(KEYS[totals + j], distinct, position, rule, member)
      local more = extra and extra(member, j) or 0
      if more ~= 0 then
        local real = score
        score = (tonumber(real) or 0) + more
        ranked = rank_at(KEYS[totals + j], distinct, position, rule, member, score, real)
      end
      into[#into + 1] = tonumber(score) or 0
      into[#into + 1] = ranked
    end
  end
end

-- The standing a write answers, read now, before it applies anything: the distinct
-- members of `members` (which may repeat them) in the window positions `list` ('1,3'),
-- as read_standing reads them (with `extra`, if given). The function it returns reads them again and answers
-- the standing part of the reply: per member and window, total and rank before, then
-- after.
local function standing_of(list, members, totals, dense, position, rule, extra)
  local windows, distinct, seen, before = {}, {}, {}, {}
  for j in string.gmatch(list, '%d+') do windows[#windows + 1] = tonumber(j) end
  for _, member in ipairs(members) do
    if not seen[member] then
      seen[member] = true
      distinct[#distinct + 1] = member
    end
  end
  read_standing(before, distinct, windows, totals, dense, position, rule, extra)
  return function()
    local after, flat = {}, {}
    read_standing(after, distinct, windows, totals, dense, position, rule, extra)
    for x = 1, #after, 2 do
      flat[#flat + 1], flat[#flat + 2] = before[x], before[x + 1]
      flat[#flat + 1], flat[#flat + 2] = after[x], after[x + 1]
    end
    return flat
  end
end
