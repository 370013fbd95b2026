-- trend_read.lua: read a trending board's ranking, in one atomic step with the landmark
-- its stored values are scaled to (the caller decays them to its now).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stored values  trend_{b}   (negated: ascending = ranking; ranked = below 0)
--
-- ARGV[1]  expected board version
-- ARGV[2]  what to read:
--   'top', offset, limit, now ms, min, max[, 'asc']
--                             -> {landmark, better, above, {member, value, ...}, from}:
--                                ranked members whose score at now is in [min, max]
--                                (either '' for open), from the offset-th of them (counted
--                                from the bottom of the range with 'asc'; the items still
--                                come highest first); better = members strictly ahead of
--                                the first (0 when none), above = members above the
--                                range, from = the first item's place in the range
--   'member', m               -> {landmark, value, better, below, ranked} or
--                                {landmark, false} without a value; below = ranked
--                                members strictly behind, ranked = all ranked members;
--                                better false and below 0 for a value not ranked
--   'ranks', m1, m2, ...      -> {landmark, {value or false, better or false, ...}}:
--                                every value, better only for a ranked one
--   'around', m, n[, 'fill']  -> {landmark, from, better, {member, value, ...}} or
--                                {landmark, false}: positions from..pos+n (the caller
--                                drops the unranked ones at the end); with 'fill', the
--                                2n+1 positions (or every ranked one) around pos shifted
--                                to stay inside the ranking
--   'counts'                  -> {landmark, members, ranked, 1 while a rescale runs else 0}
-- Values are returned as Redis prints them (17 significant digits: exact).

local record = board_record(KEYS[1], ARGV[1], 'landmark', 'half_life', 'rs_landmark')
local z = KEYS[2]
local landmark = record[3]

local function better(v)
  return redis.call('ZCOUNT', z, '-inf', '(' .. v)
end

local function ranked_value(member)
  local v = redis.call('ZSCORE', z, member)
  if v and tonumber(v) < 0 then
    return v
  end
  return false
end

-- The member's stored value whatever its sign, false without one (or at exactly 0).
local function any_value(member)
  local v = redis.call('ZSCORE', z, member)
  if v and tonumber(v) ~= 0 then
    return v
  end
  return false
end

local mode = ARGV[2]
if mode == 'top' then
  -- Scores to stored values: score · 2^((now − landmark)/h), negated.
  local scale = 2 ^ ((tonumber(ARGV[5]) - tonumber(landmark)) / (tonumber(record[4]) * 1000))
  local lo, hi, above = '-inf', '(0', 0
  if ARGV[7] ~= '' then
    lo = string.format('%.17g', -tonumber(ARGV[7]) * scale)
    above = redis.call('ZCOUNT', z, '-inf', '(' .. lo)
  end
  if ARGV[6] ~= '' and tonumber(ARGV[6]) > 0 then
    hi = string.format('%.17g', -tonumber(ARGV[6]) * scale)
  end
  local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
  if ARGV[8] == 'asc' then
    -- The range is a run of consecutive positions: its last `limit` before `offset`
    -- from its end.
    local run = redis.call('ZCOUNT', z, lo, hi)
    limit = math.max(0, math.min(limit, run - offset))
    offset = math.max(0, run - offset - limit)
    if limit == 0 then
      return { landmark, 0, above, {}, offset }
    end
  end
  local items = redis.call('ZRANGEBYSCORE', z, lo, hi, 'WITHSCORES', 'LIMIT', offset, limit)
  local first = 0
  if #items > 0 then
    first = better(items[2])
  end
  return { landmark, first, above, items, offset }
elseif mode == 'member' then
  local v = any_value(ARGV[3])
  if not v then
    return { landmark, false }
  end
  local ranked = redis.call('ZCOUNT', z, '-inf', '(0')
  if tonumber(v) > 0 then
    -- A negative score: answered, not ranked (no ranked member is behind it).
    return { landmark, v, false, 0, ranked }
  end
  return { landmark, v, better(v), ranked - redis.call('ZCOUNT', z, '-inf', v), ranked }
elseif mode == 'ranks' then
  local out = {}
  for a = 3, #ARGV do
    local v = any_value(ARGV[a])
    out[#out + 1] = v
    out[#out + 1] = v and tonumber(v) < 0 and better(v) or false
  end
  return { landmark, out }
elseif mode == 'counts' then
  local rescaling = 0
  if record[5] then rescaling = 1 end
  return { landmark, redis.call('ZCARD', z), redis.call('ZCOUNT', z, '-inf', '(0'), rescaling }
elseif mode == 'around' then
  local v = ranked_value(ARGV[3])
  if not v then
    return { landmark, false }
  end
  local pos, n = redis.call('ZRANK', z, ARGV[3]), tonumber(ARGV[4])
  local from, to = math.max(0, pos - n), pos + n
  if ARGV[5] == 'fill' then
    local size = math.min(2 * n + 1, redis.call('ZCOUNT', z, '-inf', '(0'))
    from = math.min(from, redis.call('ZCOUNT', z, '-inf', '(0') - size)
    to = from + size - 1
  end
  local items = redis.call('ZRANGE', z, from, to, 'WITHSCORES')
  return { landmark, from, better(items[2]), items }
end
refuse('ORDER unknown read mode ' .. tostring(mode))
