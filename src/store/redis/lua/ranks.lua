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

-- The rule of ranked_total of a board whose record's 'rank' is `rank` (false: none).
local function rank_rule(rank)
  if rank == 'all' then return 'all' end
  return rank == 'nonzero'
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
-- `score` (a number), were each member of `moved` holding the total it says there:
-- moved[m] = {m's total (a number; false without one), the total it would hold (0:
-- none)}; `member` itself is in it when its total is not `score` (false when `score`
-- is not ranked). From the ranking's counts, corrected by each moved member: O(#moved
-- + log N), dense O(#moved log N).
local function rank_as_if(totals, dense, position, rule, member, score, moved)
  if score == 0 or not ranked_total(score, rule) then return false end
  local text = string.format('%d', score)
  local greater = redis.call('ZCOUNT', totals, '(' .. text, '+inf')
  for _, m in pairs(moved) do
    if m[2] ~= 0 and m[2] > score then greater = greater + 1 end
    if m[1] and m[1] > score then greater = greater - 1 end
  end
  if position then
    local bytes_before, tied_before = tie_order()
    local before = tied_before(totals, text, member)
    for other, m in pairs(moved) do
      if other ~= member and bytes_before(other, member) then
        if m[2] == score then before = before + 1 end
        if m[1] == score then before = before - 1 end
      end
    end
    return greater + before + 1
  end
  if dense then
    -- Per total, how many more members would hold it; a total above `score` counts
    -- while some member holds it.
    local change = {}
    for _, m in pairs(moved) do
      if m[1] then change[m[1]] = (change[m[1]] or 0) - 1 end
      if m[2] ~= 0 then change[m[2]] = (change[m[2]] or 0) + 1 end
    end
    local above = redis.call('ZCOUNT', dense, '(' .. text, '+inf')
    for total, more in pairs(change) do
      if total > score and more ~= 0 then
        local at = string.format('%d', total)
        local held = redis.call('ZCOUNT', totals, at, at)
        above = above + ((held + more > 0) and 1 or 0) - ((held > 0) and 1 or 0)
      end
    end
    return above + 1
  end
  return greater + 1
end

-- The standing of a write that answers it (write.lua, write_max.lua): appends to `into`,
-- for each of `members` and each window position j of `windows`, the member's total in
-- KEYS[totals + j] (0 without one) and its rank there (false when not ranked; dense: by
-- the distinct totals KEYS[dense + 2j] when `dense` is given), the board ranking as
-- `rule` says (ranked_total); with `as_if` (write.lua's, for a quarantined writer), as
-- the window would read with the totals as_if(j) moves (rank_as_if's `moved`; nil:
-- none).
local function read_standing(into, members, windows, totals, dense, position, rule, as_if)
  local moved = {}
  for _, j in ipairs(windows) do moved[j] = as_if and as_if(j) or false end
  for _, member in ipairs(members) do
    for _, j in ipairs(windows) do
      local distinct = dense and KEYS[dense + 2 * j] or nil
      local score, ranked = member_rank(KEYS[totals + j], distinct, position, rule, member)
      if moved[j] and next(moved[j]) then
        local own = moved[j][member]
        score = own and own[2] or (tonumber(score) or 0)
        ranked = rank_as_if(KEYS[totals + j], distinct, position, rule, member, score, moved[j])
      end
      into[#into + 1] = tonumber(score) or 0
      into[#into + 1] = ranked
    end
  end
end

-- The standing a write answers, read now, before it applies anything: the distinct
-- members of `members` (which may repeat them) in the window positions `list` ('1,3'),
-- as read_standing reads them (with `as_if`, if given). The function it returns reads
-- them again and answers the standing part of the reply: per member and window, total
-- and rank before, then after.
local function standing_of(list, members, totals, dense, position, rule, as_if)
  local windows, distinct, seen, before = {}, {}, {}, {}
  for j in string.gmatch(list, '%d+') do windows[#windows + 1] = tonumber(j) end
  for _, member in ipairs(members) do
    if not seen[member] then
      seen[member] = true
      distinct[#distinct + 1] = member
    end
  end
  read_standing(before, distinct, windows, totals, dense, position, rule, as_if)
  return function()
    local after, flat = {}, {}
    read_standing(after, distinct, windows, totals, dense, position, rule, as_if)
    for x = 1, #after, 2 do
      flat[#flat + 1], flat[#flat + 2] = before[x], before[x + 1]
      flat[#flat + 1], flat[#flat + 2] = after[x], after[x + 1]
    end
    return flat
  end
end
