-- rate_hits.lua: counts batches of hits of one or more rate keys, each key's hits in its
-- time ring hit by hit in the order given, with the rules of src/rates/ring.rs (as
-- rate_hit.lua, which keeps checks), but with O(1) Redis commands per key instead of
-- per hit: one GETRANGE reads the heads, the hits are played in Lua on a sparse view of
-- the ring, and one BITFIELD writes the result (a head's SET, the clears of the slots a
-- head passed, one op per counter touched). A head that passes more than SHORT slots is
-- cleared by SETRANGE. Keys are played one after the other; one call carries many keys
-- so that its fixed cost is shared (on a Cluster, keys of one hash slot only).
--
-- Counters the batch only adds to (slots the heads already held) are not read: their
-- INCRBYs run first, under OVERFLOW FAIL. Should one fail (a counter would pass
-- 2^32 - 1), the BITFIELD's other ops are undone from the values it returned and the
-- hits are played again one at a time, each reading its counters first, so an
-- overflowing hit changes nothing and the others count, exactly as one by one.
--
-- KEYS[1 .. K]  the rate keys (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  T, the number of tiers
-- ARGV[3 .. 2+2T]        per tier: slot length (ms), slots
-- ARGV[3+2T .. 2+2T+K]   per key: how many of the hits below are its (they follow in
--                        key order)
-- ARGV[3+2T+K ..]        per hit: its time (unix ms), its count (1 .. 2^32-1)
--
-- The key expires when its newest slot leaves its longest tier (it then holds nothing),
-- set when that moment moves.
--
-- Returns per hit, in the order given: the tiers that counted it (0: too late for every tier), or
-- -1 when a counter would pass 2^32 - 1; either way such a hit changed nothing.

local key -- the key being played
local now = tonumber(ARGV[1])
local ntiers = tonumber(ARGV[2])
local MAX_COUNT = 4294967295
local SHORT = 8
local floor, min = math.floor, math.min

-- Per tier (at most 8): slot length, slots, bit offset of its counters, current slot.
local g, n, base, now_slot = { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 },
  { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 }
local size = 8 * ntiers
for t = 1, ntiers do
  g[t] = tonumber(ARGV[1 + 2 * t])
  n[t] = tonumber(ARGV[2 + 2 * t])
  base[t] = 8 * size
  size = size + 4 * n[t]
  now_slot[t] = floor(now / g[t])
end
local nkeys = #KEYS
local first_arg = 3 + 2 * ntiers + nkeys

-- Whether position p of tier t is among the k positions from `from` on.
local function within(t, p, from, k)
  return k >= n[t] or (p - from) % n[t] < k
end

-- Plays hits `first` .. `last` (indexes from 0) into `results`. With `exact`, the
-- counters at the hits' slots are read first; without, the counters the batch only adds
-- to are not read, and the call answers false (its writes undone) if one overflows.
local function play(first, last, exact, results)
  local raw = redis.call('GETRANGE', key, 0, 8 * ntiers - 1)
  local fresh_key = #raw < 8 * ntiers
  local h0, head = { false, false, false, false, false, false, false, false },
    { false, false, false, false, false, false, false, false }
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
  -- By a counter's bit offset: known, its exact value (read, or cleared by this
  -- batch); add, what the batch adds to a counter it has not read.
  local known, add = {}, {}
  if exact and not fresh_key then
    local ops, no = {}, 0
    for i = first, last do
      local at = tonumber(ARGV[first_arg + 2 * i])
      for t = 1, ntiers do
        ops[no + 1], ops[no + 2], ops[no + 3] = 'GET', 'u32', base[t] + 32 * (floor(at / g[t]) % n[t])
        no = no + 3
      end
    end
    local values = redis.call('BITFIELD', key, unpack(ops))
    for k = 1, #values do
      known[ops[3 * k]] = values[k]
    end
  end

  -- A counter's value when known: read, cleared by this batch, or in an empty tier.
  local function value(t, p)
    local v = known[base[t] + 32 * p]
    if v ~= nil then
      return v
    end
    if not h0[t] or (head[t] > h0[t] and within(t, p, (h0[t] + 1) % n[t], head[t] - h0[t])) then
      return 0
    end
    return nil
  end

  -- Marks the k positions of tier t from `from` on cleared, in known and add.
  local function clear(t, from, k)
    local lo, hi = base[t], base[t] + 32 * n[t]
    for b in pairs(known) do
      if b >= lo and b < hi and within(t, (b - lo) / 32, from, k) then
        known[b] = 0
      end
    end
    for b in pairs(add) do
      if b >= lo and b < hi and within(t, (b - lo) / 32, from, k) then
        add[b] = nil
        known[b] = 0
      end
    end
  end

  local slot, target, counts = { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 },
    { false, false, false, false, false, false, false, false }
  local moved, any = false, false
  -- The counters of the last hit counted, and its time: a hit at the same time counts
  -- in the same tiers, at the same counters, and moves no head.
  local last_at, last_counted, cells, ncells = nil, 0, { 0, 0, 0, 0, 0, 0, 0, 0 }, 0
  for i = first, last do
    local at = tonumber(ARGV[first_arg + 2 * i])
    local count = tonumber(ARGV[first_arg + 2 * i + 1])
    if at == last_at then
      local over = false
      for c = 1, ncells do
        local v = known[cells[c]]
        if v ~= nil and v + count > MAX_COUNT then
          over = true
        end
      end
      if over then
        results[i + 1] = -1
      else
        results[i + 1] = last_counted
        for c = 1, ncells do
          local b = cells[c]
          local v = known[b]
          if v ~= nil then
            known[b] = v + count
          else
            add[b] = add[b] + count
          end
        end
      end
    else
      last_at = nil
      local counted = 0
      for t = 1, ntiers do
        local s = floor(at / g[t])
        local reach = now_slot[t]
        if head[t] and head[t] > reach then
          reach = head[t]
        end
        slot[t], counts[t] = s, s > reach - n[t]
        if s > reach then
          target[t] = s
        else
          target[t] = reach
        end
        if counts[t] then
          counted = counted + 1
        end
      end
      local over = false
      if counted > 0 then
        for t = 1, ntiers do
          if counts[t] and head[t] and slot[t] <= head[t] then
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
        any, last_at, last_counted, ncells = true, at, counted, 0
        for t = 1, ntiers do
          if not head[t] then
            head[t], moved = target[t], true
          elseif target[t] > head[t] then
            if next(known) ~= nil or next(add) ~= nil then
              clear(t, (head[t] + 1) % n[t], min(target[t] - head[t], n[t]))
            end
            head[t], moved = target[t], true
          end
          if counts[t] then
            local p = slot[t] % n[t]
            local v = value(t, p)
            local b = base[t] + 32 * p
            if v ~= nil then
              known[b] = v + count
            else
              add[b] = (add[b] or 0) + count
            end
            ncells = ncells + 1
            cells[ncells] = b
          end
        end
      end
    end
  end
  if not any then
    return true
  end

  -- The writes: blind adds first (under OVERFLOW FAIL), then clears, heads, values.
  local ops, no = { 'OVERFLOW', 'FAIL' }, 2
  local added, long, cleared = {}, {}, {}
  for b, a in pairs(add) do
    ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'INCRBY', 'u32', b, a
    no = no + 4
    added[#added + 1] = b
  end
  for t = 1, ntiers do
    if h0[t] and head[t] > h0[t] then
      local k = min(head[t] - h0[t], n[t])
      if k > SHORT then
        long[#long + 1] = t
      else
        for j = h0[t] + 1, h0[t] + k do
          local b = base[t] + 32 * (j % n[t])
          ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', b, 0
          no = no + 4
          cleared[#cleared + 1] = b
        end
      end
    end
  end
  for t = 1, ntiers do
    if head[t] ~= h0[t] then
      ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] =
        'SET', 'i64', 64 * (t - 1), string.format('%d', head[t] + 1)
      no = no + 4
    end
  end
  for b, v in pairs(known) do
    if v > 0 then
      ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', b, string.format('%d', v)
      no = no + 4
    end
  end

  -- Undoes the adds that went through (done[i] of added[i]), and with `all` the heads
  -- and the cleared counters, from the values their SETs returned (the values set
  -- after them lie among them).
  local function undo(done, all)
    local ops, no = {}, 0
    for i = 1, #added do
      if done[i] then
        ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'INCRBY', 'u32', added[i], -add[added[i]]
        no = no + 4
      end
    end
    if all then
      for t = 1, ntiers do
        if head[t] ~= h0[t] then
          ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] =
            'SET', 'i64', 64 * (t - 1), string.format('%d', (h0[t] or -1) + 1)
          no = no + 4
        end
      end
      for i = 1, #cleared do
        ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', cleared[i], done[#added + i]
        no = no + 4
      end
    end
    if no > 0 then
      redis.call('BITFIELD', key, unpack(ops))
    end
  end

  local function failed(done)
    for i = 1, #added do
      if not done[i] then
        return true
      end
    end
    return false
  end

  if fresh_key then
    redis.call('SETRANGE', key, size - 1, '\0')
  end
  if #long > 0 and #added > 0 then
    -- The adds alone first: a failure then has only them to undo.
    local done = redis.call('BITFIELD', key, unpack(ops, 1, 2 + 4 * #added))
    if failed(done) then
      undo(done, false)
      return false
    end
    ops = { unpack(ops, 3 + 4 * #added, no) }
    no, added = #ops, {}
  end
  for _, t in ipairs(long) do
    local k = min(head[t] - h0[t], n[t])
    local p = (h0[t] + 1) % n[t]
    local part = min(k, n[t] - p)
    redis.call('SETRANGE', key, base[t] / 8 + 4 * p, string.rep('\0', 4 * part))
    if k > part then
      redis.call('SETRANGE', key, base[t] / 8, string.rep('\0', 4 * (k - part)))
    end
  end
  if no > 0 then
    local done = redis.call('BITFIELD', key, unpack(ops, 1, no))
    if failed(done) then
      undo(done, true)
      return false
    end
  end
  -- The key expires when its newest slot leaves its longest-lasting tier; that moment
  -- changes only when that tier's head moves (for the default tiers, once a day).
  if moved then
    local until_old, until_new = 0, 0
    for t = 1, ntiers do
      if h0[t] then
        until_old = math.max(until_old, (h0[t] + 1 + n[t]) * g[t])
      end
      until_new = math.max(until_new, (head[t] + 1 + n[t]) * g[t])
    end
    if until_new ~= until_old then
      redis.call('PEXPIRE', key, string.format('%d', math.max(1, until_new - now)))
    end
  end
  return true
end

local results = {}
local first = 0
for k = 1, nkeys do
  key = KEYS[k]
  local last = first + tonumber(ARGV[2 + 2 * ntiers + k]) - 1
  if not play(first, last, false, results) then
    for i = first, last do
      play(i, i, true, results)
    end
  end
  first = last + 1
end
return results
