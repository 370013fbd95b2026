-- rate_hit.lua: given a window and a limit, counts a hit in a rate key's time ring only
-- if the window then holds at most the limit (a check; without them, a plain hit: hits
-- go through rate_hits.lua, in batches, with the same rules). The rules are
-- those of src/rates/ring.rs, step for step; the layout is one string: per tier an
-- 8-byte head (newest slot advanced to, plus 1; 0 while empty), then per tier its
-- counters, 4 bytes each (slot j at position j mod slots). Work is O(1) commands per
-- tier whatever the gap since the last hit: passing slots are cleared with at most two
-- SETRANGEs per tier, and a whole silent cycle clears the tier at once.
--
-- KEYS[1]  the rate key (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  the hit's time, unix ms
-- ARGV[3]  count (1 .. 2^32-1)     ARGV[4]  T, the number of tiers
-- ARGV[5 .. 4+2T]  per tier: slot length (ms), slots
-- ARGV[5+2T .. 7+2T]  (a check only) the window's tier (from 1), its slots, the limit
--
-- The key expires when its newest slot leaves its longest tier (it then holds nothing),
-- set whenever a head moves (at most once per finest slot), not on every hit.
--
-- Returns {tiers that counted the hit} (0: too late for every tier, nothing changed);
-- for a check {1 or 0 (allowed), the window's count after, ms until a retry could be
-- allowed (0 when allowed, -1 when never)}; {-1} when a counter would pass 2^32 - 1
-- (nothing changed).

local key = KEYS[1]
local now = tonumber(ARGV[1])
local at = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local ntiers = tonumber(ARGV[4])
local MAX_COUNT = 4294967295

local tiers = {}
local size = 8 * ntiers
for t = 1, ntiers do
  local n = tonumber(ARGV[4 + 2 * t])
  tiers[t] = { g = tonumber(ARGV[3 + 2 * t]), n = n, base = size }
  size = size + 4 * n
end

-- The bit offset of `slot`'s counter on tier t.
local function bit(t, slot)
  return 8 * tiers[t].base + 32 * (slot % tiers[t].n)
end

-- One read: every head, and the counter at the hit's slot on every tier (its position
-- does not depend on the head; whether it holds the slot does).
local reads = {}
for t = 1, ntiers do
  reads[#reads + 1] = 'GET'
  reads[#reads + 1] = 'i64'
  reads[#reads + 1] = (t - 1) * 64
end
for t = 1, ntiers do
  reads[#reads + 1] = 'GET'
  reads[#reads + 1] = 'u32'
  reads[#reads + 1] = bit(t, math.floor(at / tiers[t].g))
end
local read = redis.call('BITFIELD', key, unpack(reads))
local fresh_key = true
for t = 1, ntiers do
  if read[t] ~= 0 then
    tiers[t].head = read[t] - 1
    fresh_key = false
  end
  tiers[t].at_count = read[ntiers + t]
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

-- Per tier, whether the last hit() counted there.
local counted_in = {}

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
    counted_in[t] = counts
    if counts then
      counted = counted + 1
    end
  end
  if counted == 0 then
    return 0
  end
  -- Every counter that keeps its value is checked first, so an overflow changes nothing.
  for t = 1, ntiers do
    local p = plan[t]
    local kept = tiers[t].head ~= nil and p.slot <= tiers[t].head
    if p.counts and kept and tiers[t].at_count + count > MAX_COUNT then
      return -1
    end
  end
  if fresh_key then
    redis.call('SETRANGE', key, size - 1, '\0')
  end
  local advanced = false
  local ops = {}
  for t = 1, ntiers do
    local tier, p = tiers[t], plan[t]
    if tier.head == nil or p.target > tier.head then
      if tier.head ~= nil then
        clear(t, tier.head + 1, math.min(p.target - tier.head, tier.n))
      end
      tier.head = p.target
      advanced = true
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
  if advanced then
    -- The key expires when its newest slot leaves its longest tier: it then holds nothing.
    local ttl = 1
    for t = 1, ntiers do
      ttl = math.max(ttl, (tiers[t].head + 1 + tiers[t].n) * tiers[t].g - now)
    end
    redis.call('PEXPIRE', key, string.format('%d', ttl))
  end
  return counted
end

if ARGV[5 + 2 * ntiers] == nil then
  return { hit() }
end

local w = tonumber(ARGV[5 + 2 * ntiers])
local m = tonumber(ARGV[6 + 2 * ntiers])
local limit = tonumber(ARGV[7 + 2 * ntiers])
local current, first, last, values = window(w, m)
if current + count <= limit then
  if hit() < 0 then
    return { -1 }
  end
  -- The window after the hit, without reading it again: the head moved (if at all) past
  -- slots the window did not hold, and the hit, at now, is in the window's current slot
  -- when its tier counted it.
  local after = current
  if counted_in[w] then
    after = current + count
  end
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
