-- rate_hit.lua: counts a hit in a rate key's time ring or, given a window and a limit,
-- counts it only if the window then holds at most the limit (a check). The rules are
-- those of src/rates/ring.rs, step for step; the layout is one string: per tier an
-- 8-byte head (newest slot advanced to, plus 1; 0 while empty), then per tier its
-- counters, 4 bytes each (slot j at position j mod slots). Work is O(1) commands per
-- tier whatever the gap since the last hit: passing slots are cleared with at most two
-- SETRANGEs per tier, and a whole silent cycle clears the tier at once.
--
-- KEYS[1]  the rate key (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  the hit's time, unix ms
-- ARGV[3]  count (1 .. 2^32-1)     ARGV[4]  expiry, ms (the longest tier's span)
-- ARGV[5]  T, the number of tiers  ARGV[6 .. 5+2T]  per tier: slot length (ms), slots
-- ARGV[6+2T .. 8+2T]  (a check only) the window's tier (from 1), its slots, the limit
--
-- Returns {tiers that counted the hit} (0: too late for every tier, nothing changed);
-- for a check {1 or 0 (allowed), the window's count after, ms until a retry could be
-- allowed (0 when allowed, -1 when never)}; {-1} when a counter would pass 2^32 - 1
-- (nothing changed).

local key = KEYS[1]
local now = tonumber(ARGV[1])
local at = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local ttl = ARGV[4]
local ntiers = tonumber(ARGV[5])
local MAX_COUNT = 4294967295

local tiers = {}
local size = 8 * ntiers
local head_ops = {}
for t = 1, ntiers do
  local n = tonumber(ARGV[5 + 2 * t])
  tiers[t] = { g = tonumber(ARGV[4 + 2 * t]), n = n, base = size }
  size = size + 4 * n
  head_ops[#head_ops + 1] = 'GET'
  head_ops[#head_ops + 1] = 'i64'
  head_ops[#head_ops + 1] = (t - 1) * 64
end
local raw_heads = redis.call('BITFIELD', key, unpack(head_ops))
for t = 1, ntiers do
  if raw_heads[t] ~= 0 then
    tiers[t].head = raw_heads[t] - 1
  end
end

-- The bit offset of `slot`'s counter on tier t.
local function bit(t, slot)
  return 8 * tiers[t].base + 32 * (slot % tiers[t].n)
end

-- Zeros the counters of `k` slots of tier t from slot `first` on (k <= n).
local function clear(t, first, k)
  local tier = tiers[t]
  local p = first % tier.n
  local head_part = math.min(k, tier.n - p)
  redis.call('SETRANGE', key, tier.base + 4 * p, string.rep('\0', 4 * head_part))
  if k > head_part then
    redis.call('SETRANGE', key, tier.base, string.rep('\0', 4 * (k - head_part)))
  end
end

-- The held slots of a window of m slots on tier t at now: count, first, last, values.
local function window(t, m)
  local tier = tiers[t]
  if tier.head == nil then
    return 0, 1, 0, {}
  end
  local now_slot = math.floor(now / tier.g)
  local first = math.max(now_slot - m, tier.head - tier.n) + 1
  local last = math.min(now_slot, tier.head)
  if first > last then
    return 0, first, last, {}
  end
  local ops = {}
  for j = first, last do
    ops[#ops + 1] = 'GET'
    ops[#ops + 1] = 'u32'
    ops[#ops + 1] = bit(t, j)
  end
  local values = redis.call('BITFIELD', key, unpack(ops))
  local sum = 0
  for i = 1, #values do
    sum = sum + values[i]
  end
  return sum, first, last, values
end

-- Counts `count` at `at`: the number of tiers that counted it, or -1 on overflow.
local function hit()
  local plan, counted = {}, 0
  for t = 1, ntiers do
    local tier = tiers[t]
    local now_slot = math.floor(now / tier.g)
    local slot = math.floor(at / tier.g)
    local reach = now_slot
    if tier.head ~= nil and tier.head > reach then
      reach = tier.head
    end
    local counts = slot > reach - tier.n
    plan[t] = { slot = slot, target = math.max(reach, slot), counts = counts }
    if counts then
      counted = counted + 1
    end
  end
  if counted == 0 then
    return 0
  end
  -- Every counter that keeps its value is checked first, so an overflow changes nothing.
  local checks = {}
  for t = 1, ntiers do
    local p = plan[t]
    if p.counts and tiers[t].head ~= nil and p.slot <= tiers[t].head then
      checks[#checks + 1] = 'GET'
      checks[#checks + 1] = 'u32'
      checks[#checks + 1] = bit(t, p.slot)
    end
  end
  if #checks > 0 then
    local values = redis.call('BITFIELD', key, unpack(checks))
    for i = 1, #values do
      if values[i] + count > MAX_COUNT then
        return -1
      end
    end
  end
  if redis.call('EXISTS', key) == 0 then
    redis.call('SETRANGE', key, size - 1, '\0')
  end
  local ops = {}
  for t = 1, ntiers do
    local tier, p = tiers[t], plan[t]
    if tier.head == nil or p.target > tier.head then
      if tier.head ~= nil then
        clear(t, tier.head + 1, math.min(p.target - tier.head, tier.n))
      end
      tier.head = p.target
      ops[#ops + 1] = 'SET'
      ops[#ops + 1] = 'i64'
      ops[#ops + 1] = (t - 1) * 64
      ops[#ops + 1] = string.format('%d', p.target + 1)
    end
    if p.counts then
      ops[#ops + 1] = 'INCRBY'
      ops[#ops + 1] = 'u32'
      ops[#ops + 1] = bit(t, p.slot)
      ops[#ops + 1] = count
    end
  end
  redis.call('BITFIELD', key, unpack(ops))
  redis.call('PEXPIRE', key, ttl)
  return counted
end

if ARGV[6 + 2 * ntiers] == nil then
  return { hit() }
end

local w = tonumber(ARGV[6 + 2 * ntiers])
local m = tonumber(ARGV[7 + 2 * ntiers])
local limit = tonumber(ARGV[8 + 2 * ntiers])
local current, first, last, values = window(w, m)
if current + count <= limit then
  if hit() < 0 then
    return { -1 }
  end
  local after = window(w, m)
  return { 1, after, 0 }
end
if count > limit then
  return { 0, current, -1 }
end
local g = tiers[w].g
local now_slot = math.floor(now / g)
local left = current
for k = 1, m do
  local leaving = now_slot - m + k
  if leaving >= first and leaving <= last then
    left = left - values[leaving - first + 1]
  end
  if left + count <= limit then
    return { 0, current, (now_slot + k) * g - now }
  end
end
return { 0, current, (now_slot + m) * g - now }
