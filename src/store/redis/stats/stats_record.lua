-- stats_record.lua: record values in one or more groups, a group being a (context, kind)
-- and an hour: count, sum, min, max, Welford's mean and m2, and histogram buckets,
-- rolling the hour over first; then, on a single node, put each group's newest mean in
-- its kind's slowest list, trimmed once per kind. One call carries the records of many
-- contexts so that its fixed cost (and the list's trim) is shared; on a Cluster its
-- groups share one hash slot and the lists (another slot) are updated by
-- stats_slowest.lua from what this call returns.
--
-- KEYS[2g-1], KEYS[2g], g = 1..G   group g's newest hour   stat_{<context>}_<kind>
--                                  and the hour before it  statprev_{<context>}_<kind>
-- KEYS[2G+2k-1], KEYS[2G+2k],      kind k's slowest list (score = mean, member =
--   k = 1..K                       context) slowest_{<kind>} and its per-context
--                                  'hour:count' slowest_meta_{<kind>} (K = 0 on Cluster)
--
-- ARGV[1]  G, the groups          ARGV[2]  K, the slowest lists
-- ARGV[3]  N, entries each slowest list keeps
-- then per group, in order:
--   hour     the caller's hour, unix seconds
--   kind     k of its kind's slowest list among KEYS, 0 for none
--   v        the number of its values
--   b        the number of its histogram bucket pairs
--   context  the context (the slowest list's member)
--   values   the v values (finite numbers), in order, as one string of 8 bytes each
--            (little-endian IEEE 754 doubles): read with struct.unpack, so a value costs
--            no argument of its own and no decimal parsing (~0.08 us of Redis time
--            instead of ~0.36 us as a decimal argument)
--   b pairs (histogram bucket field, values in it): z, p<i> or n<i>, see
--   src/domain/stats.rs
--
-- When the stored hour is older than a group's hour, it becomes the hour before (if it
-- is the one just before) or goes. A caller whose clock is behind counts in the stored
-- hour. Both keys expire three hours after their last record (nothing reads them later).
-- Groups are played in order: two groups of one (context, kind) add up. Each group is
-- three commands: one HMGET (moments and buckets), one HSET, one EXPIRE. The values
-- are added one by one in their order (Welford), exactly as the memory store adds them.
-- Returns per group {hour, count, mean} of its newest hour, flat.
-- Not idempotent: it adds; never re-sent after a lost reply.

local ngroups = tonumber(ARGV[1])
local nkinds = tonumber(ARGV[2])
local kept = tonumber(ARGV[3])
local sunpack = struct.unpack
-- Values decoded per struct.unpack call (one call per value costs ~30 % more).
local WIDE = 32
local wide = '<' .. string.rep('d', WIDE)

-- 17 significant digits: a double read back is the same double.
local function exact(v)
  return string.format('%.17g', v)
end

-- Per kind: the contexts recorded, and their newest (mean, 'hour:count').
local listed = {}
for k = 1, nkinds do
  listed[k] = { order = {}, means = {}, metas = {} }
end

-- Every group's values are whole before anything is written: a malformed call writes
-- nothing.
local at = 4
for g = 1, ngroups do
  local values, pairs_ = tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  if #ARGV[at + 5] ~= 8 * values then
    return redis.error_reply('ERR stats_record.lua: group ' .. g .. ' carries ' ..
      #ARGV[at + 5] .. ' bytes for ' .. values .. ' values of 8 bytes')
  end
  at = at + 6 + 2 * pairs_
end

local out = {}
at = 4
for g = 1, ngroups do
  local newest, before = KEYS[2 * g - 1], KEYS[2 * g]
  local hour = tonumber(ARGV[at])
  local kind = tonumber(ARGV[at + 1])
  local values = tonumber(ARGV[at + 2])
  local pairs_ = tonumber(ARGV[at + 3])
  local context = ARGV[at + 4]
  local blob = ARGV[at + 5]
  local first_pair = at + 6
  at = first_pair + 2 * pairs_

  -- The moments and the buckets this group adds to, in one read.
  local fields = { 'hour', 'count', 'mean', 'm2', 'min', 'max', 'sum' }
  for i = first_pair, at - 1, 2 do
    fields[#fields + 1] = ARGV[i]
  end
  local s = redis.call('HMGET', newest, unpack(fields))
  if s[1] then
    local stored = tonumber(s[1])
    if stored < hour then
      if stored == hour - 3600 then
        redis.call('RENAME', newest, before)
      else
        redis.call('UNLINK', newest, before)
      end
      s = {}
    else
      hour = stored
    end
  end
  local n = tonumber(s[2] or '0')
  local mean = tonumber(s[3] or '0')
  local m2 = tonumber(s[4] or '0')
  local min = s[5] and tonumber(s[5]) or math.huge
  local max = s[6] and tonumber(s[6]) or -math.huge
  local sum = tonumber(s[7] or '0')
  -- WIDE values per decode, then the rest one by one; each added in order.
  local pos = 1
  local left = values
  while left > 0 do
    local xs
    if left >= WIDE then
      xs = { sunpack(wide, blob, pos) }
      pos = xs[WIDE + 1]
      xs[WIDE + 1] = nil
      left = left - WIDE
    else
      local x
      x, pos = sunpack('<d', blob, pos)
      xs = { x }
      left = left - 1
    end
    for j = 1, #xs do
      local x = xs[j]
      n = n + 1
      local delta = x - mean
      mean = mean + delta / n
      m2 = m2 + delta * (x - mean)
      if x < min then min = x end
      if x > max then max = x end
      sum = sum + x
    end
  end

  local h = string.format('%d', hour)
  local m = exact(mean)
  local set = { 'hour', h, 'count', n, 'mean', m, 'm2', exact(m2), 'min', exact(min),
    'max', exact(max), 'sum', exact(sum) }
  local f = 8
  for i = first_pair, at - 1, 2 do
    set[#set + 1] = ARGV[i]
    set[#set + 1] = string.format('%d', tonumber(s[f] or '0') + tonumber(ARGV[i + 1]))
    f = f + 1
  end
  redis.call('HSET', newest, unpack(set))
  redis.call('EXPIRE', newest, 10800)
  out[#out + 1] = h
  out[#out + 1] = n
  out[#out + 1] = m

  if kind > 0 then
    local l = listed[kind]
    if not l.means[context] then
      l.order[#l.order + 1] = context
    end
    -- A later group of the same context is its newer state.
    l.means[context] = m
    l.metas[context] = h .. ':' .. n
  end
end

-- The slowest lists: each context's newest mean (this script just made it, so it is
-- the newest there is), then the list trimmed to the N highest means.
for k = 1, nkinds do
  local l = listed[k]
  if #l.order > 0 then
    local list, meta = KEYS[2 * ngroups + 2 * k - 1], KEYS[2 * ngroups + 2 * k]
    local zadd, hset = {}, {}
    for _, context in ipairs(l.order) do
      zadd[#zadd + 1] = l.means[context]
      zadd[#zadd + 1] = context
      hset[#hset + 1] = context
      hset[#hset + 1] = l.metas[context]
    end
    redis.call('ZADD', list, unpack(zadd))
    redis.call('HSET', meta, unpack(hset))
    local trimmed = redis.call('ZRANGE', list, 0, -(kept + 1))
    if #trimmed > 0 then
      redis.call('ZREM', list, unpack(trimmed))
      redis.call('HDEL', meta, unpack(trimmed))
    end
  end
end
return out
