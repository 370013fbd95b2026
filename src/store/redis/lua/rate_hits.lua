-- rate_hits.lua: counts a batch of hits of one rate key in its time ring, hit by hit in
-- the order given, with the rules of src/rates/ring.rs (as rate_hit.lua, which keeps
-- checks), but with O(1) Redis commands per call instead of per hit: one GETRANGE reads
-- the heads, the hits are played in Lua on a sparse view of the ring, and one BITFIELD
-- writes the result (a head's SET, the clears of the slots a head passed, one op per
-- counter touched). A head that passes more than SHORT slots is cleared by SETRANGE.
--
-- Counters the batch only adds to (slots the heads already held) are not read: their
-- INCRBYs run first, under OVERFLOW FAIL. Should one fail (a counter would pass
-- 2^32 - 1), the BITFIELD's other ops are undone from the values it returned and the
-- hits are played again one at a time, each reading its counters first, so an
-- overflowing hit changes nothing and the others count, exactly as one by one.
--
-- KEYS[1]  the rate key (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  T, the number of tiers
-- ARGV[3 .. 2+2T]  per tier: slot length (ms), slots
-- ARGV[3+2T ..]    per hit: its time (unix ms), its count (1 .. 2^32-1)
--
-- The key expires when its newest slot leaves its longest tier (it then holds nothing),
-- set when a head moves.
--
-- Returns per hit, in order: the tiers that counted it (0: too late for every tier), or
-- -1 when a counter would pass 2^32 - 1; either way such a hit changed nothing.

local key = KEYS[1]
local now = tonumber(ARGV[1])
local ntiers = tonumber(ARGV[2])
local MAX_COUNT = 4294967295
local SHORT = 8

local g, n, base, now_slot = {}, {}, {}, {}
local size = 8 * ntiers
for t = 1, ntiers do
  g[t] = tonumber(ARGV[1 + 2 * t])
  n[t] = tonumber(ARGV[2 + 2 * t])
  base[t] = 8 * size
  size = size + 4 * n[t]
  now_slot[t] = math.floor(now / g[t])
end
local first_arg = 3 + 2 * ntiers
local nhits = (#ARGV - first_arg + 1) / 2

local function bitpos(t, p)
  return base[t] + 32 * p
end

-- Whether position p of tier t is among the k slots from `from` on.
local function within(t, p, from, k)
  return k >= n[t] or (p - from) % n[t] < k
end

-- Plays hits `first` .. `last` (indexes from 0) into `results`. With `exact`, the
-- counters at the hits' slots are read first; without, they are added to blind, and
-- the call answers false (after undoing its writes) if one would overflow.
local function play(first, last, exact, results)
  local raw = redis.call('GETRANGE', key, 0, 8 * ntiers - 1)
  local fresh_key = #raw < 8 * ntiers
  local h0, head = {}, {}
  local pos = 1
  for t = 1, ntiers do
    local v = 0
    if not fresh_key then
      v, pos = struct.unpack('>i8', raw, pos)
    end
    if v ~= 0 then
      h0[t], head[t] = v - 1, v - 1
    end
  end
  -- Per tier: known[p], a counter's exact value; add[p], what the batch adds to a
  -- counter it has not read (never cleared by this batch).
  local known, add = {}, {}
  for t = 1, ntiers do
    known[t], add[t] = {}, {}
  end
  if exact and not fresh_key then
    local ops = {}
    for i = first, last do
      local at = tonumber(ARGV[first_arg + 2 * i])
      for t = 1, ntiers do
        ops[#ops + 1] = 'GET'
        ops[#ops + 1] = 'u32'
        ops[#ops + 1] = bitpos(t, math.floor(at / g[t]) % n[t])
      end
    end
    local values = redis.call('BITFIELD', key, unpack(ops))
    local k = 0
    for i = first, last do
      local at = tonumber(ARGV[first_arg + 2 * i])
      for t = 1, ntiers do
        k = k + 1
        known[t][math.floor(at / g[t]) % n[t]] = values[k]
      end
    end
  end

  -- A counter's value when known: read, cleared by this batch, or in an empty ring.
  local function value(t, p)
    local v = known[t][p]
    if v ~= nil then
      return v
    end
    if h0[t] == nil or (head[t] > h0[t] and within(t, p, (h0[t] + 1) % n[t], head[t] - h0[t])) then
      return 0
    end
    return nil
  end

  local slot, target, counts = {}, {}, {}
  local moved, any = false, false
  for i = first, last do
    local at = tonumber(ARGV[first_arg + 2 * i])
    local count = tonumber(ARGV[first_arg + 2 * i + 1])
    local counted = 0
    for t = 1, ntiers do
      local s = math.floor(at / g[t])
      local reach = now_slot[t]
      if head[t] ~= nil and head[t] > reach then
        reach = head[t]
      end
      slot[t], target[t], counts[t] = s, math.max(reach, s), s > reach - n[t]
      if counts[t] then
        counted = counted + 1
      end
    end
    local over = false
    if counted > 0 then
      for t = 1, ntiers do
        if counts[t] and head[t] ~= nil and slot[t] <= head[t] then
          local v = value(t, slot[t] % n[t])
          if v ~= nil and v + count > MAX_COUNT then
            over = true
          end
        end
      end
    end
    if over then
      results[i + 1] = -1
    else
      results[i + 1] = counted
    end
    if counted > 0 and not over then
      any = true
      for t = 1, ntiers do
        if head[t] == nil then
          head[t], moved = target[t], true
        elseif target[t] > head[t] then
          local from, k = (head[t] + 1) % n[t], math.min(target[t] - head[t], n[t])
          for p in pairs(known[t]) do
            if within(t, p, from, k) then
              known[t][p] = 0
            end
          end
          for p in pairs(add[t]) do
            if within(t, p, from, k) then
              add[t][p] = nil
              known[t][p] = 0
            end
          end
          head[t], moved = target[t], true
        end
        if counts[t] then
          local p = slot[t] % n[t]
          local v = value(t, p)
          if v ~= nil then
            known[t][p] = v + count
          else
            add[t][p] = (add[t][p] or 0) + count
          end
        end
      end
    end
  end
  if not any then
    return true
  end

  -- The writes: blind adds first (under OVERFLOW FAIL), then clears, heads, values.
  local ops, adds, long = { 'OVERFLOW', 'FAIL' }, {}, {}
  for t = 1, ntiers do
    for p, a in pairs(add[t]) do
      ops[#ops + 1] = 'INCRBY'
      ops[#ops + 1] = 'u32'
      ops[#ops + 1] = bitpos(t, p)
      ops[#ops + 1] = a
      adds[#adds + 1] = { t, p, a }
    end
  end
  local cleared = {}
  for t = 1, ntiers do
    if h0[t] ~= nil and head[t] > h0[t] then
      local k = math.min(head[t] - h0[t], n[t])
      if k > SHORT then
        long[#long + 1] = t
      else
        for j = h0[t] + 1, h0[t] + k do
          ops[#ops + 1] = 'SET'
          ops[#ops + 1] = 'u32'
          ops[#ops + 1] = bitpos(t, j % n[t])
          ops[#ops + 1] = 0
          cleared[#cleared + 1] = bitpos(t, j % n[t])
        end
      end
    end
  end
  for t = 1, ntiers do
    if head[t] ~= nil and head[t] ~= h0[t] then
      ops[#ops + 1] = 'SET'
      ops[#ops + 1] = 'i64'
      ops[#ops + 1] = 64 * (t - 1)
      ops[#ops + 1] = string.format('%d', head[t] + 1)
    end
  end
  for t = 1, ntiers do
    for p, v in pairs(known[t]) do
      if v > 0 then
        ops[#ops + 1] = 'SET'
        ops[#ops + 1] = 'u32'
        ops[#ops + 1] = bitpos(t, p)
        ops[#ops + 1] = string.format('%d', v)
      end
    end
  end

  if fresh_key then
    redis.call('SETRANGE', key, size - 1, '\0')
  end
  if #long > 0 and #adds > 0 then
    -- The adds alone first: a failure then has only them to undo.
    local head_ops = { 'OVERFLOW', 'FAIL' }
    for i = 3, 2 + 4 * #adds do
      head_ops[#head_ops + 1] = ops[i]
    end
    local done = redis.call('BITFIELD', key, unpack(head_ops))
    local failed = false
    for i = 1, #adds do
      if not done[i] then
        failed = true
      end
    end
    if failed then
      local undo = {}
      for i = 1, #adds do
        if done[i] then
          undo[#undo + 1] = 'INCRBY'
          undo[#undo + 1] = 'u32'
          undo[#undo + 1] = bitpos(adds[i][1], adds[i][2])
          undo[#undo + 1] = -adds[i][3]
        end
      end
      if #undo > 0 then
        redis.call('BITFIELD', key, unpack(undo))
      end
      return false
    end
    local rest = {}
    for i = 3 + 4 * #adds, #ops do
      rest[#rest + 1] = ops[i]
    end
    ops, adds = rest, {}
  end
  for _, t in ipairs(long) do
    local k = math.min(head[t] - h0[t], n[t])
    local p = (h0[t] + 1) % n[t]
    local part = math.min(k, n[t] - p)
    redis.call('SETRANGE', key, base[t] / 8 + 4 * p, string.rep('\0', 4 * part))
    if k > part then
      redis.call('SETRANGE', key, base[t] / 8, string.rep('\0', 4 * (k - part)))
    end
  end
  if #ops > 0 then
    local done = redis.call('BITFIELD', key, unpack(ops))
    local failed = false
    for i = 1, #adds do
      if not done[i] then
        failed = true
      end
    end
    if failed then
      -- Undo: the adds that went through, the heads, then the cleared counters'
      -- values (which the SETs returned; the values set after them lie among them).
      local undo = {}
      for i = 1, #adds do
        if done[i] then
          undo[#undo + 1] = 'INCRBY'
          undo[#undo + 1] = 'u32'
          undo[#undo + 1] = bitpos(adds[i][1], adds[i][2])
          undo[#undo + 1] = -adds[i][3]
        end
      end
      for t = 1, ntiers do
        if head[t] ~= h0[t] then
          undo[#undo + 1] = 'SET'
          undo[#undo + 1] = 'i64'
          undo[#undo + 1] = 64 * (t - 1)
          undo[#undo + 1] = string.format('%d', (h0[t] or -1) + 1)
        end
      end
      for i = 1, #cleared do
        undo[#undo + 1] = 'SET'
        undo[#undo + 1] = 'u32'
        undo[#undo + 1] = cleared[i]
        undo[#undo + 1] = done[#adds + i]
      end
      redis.call('BITFIELD', key, unpack(undo))
      return false
    end
  end
  if moved then
    local ttl = 1
    for t = 1, ntiers do
      if head[t] ~= nil then
        ttl = math.max(ttl, (head[t] + 1 + n[t]) * g[t] - now)
      end
    end
    redis.call('PEXPIRE', key, string.format('%d', ttl))
  end
  return true
end

local results = {}
if not play(0, nhits - 1, false, results) then
  for i = 0, nhits - 1 do
    play(i, i, true, results)
  end
end
return results
