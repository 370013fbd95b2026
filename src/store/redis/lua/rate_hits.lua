-- rate_hits.lua: counts batches of hits of one or more rate keys, each key's hits in its
-- time ring hit by hit in the order given, with the rules of src/rates/ring.rs (as
-- rate_hit.lua, which keeps checks). One call carries many keys so that its fixed cost
-- is shared (on a Cluster, keys of one hash slot only).
--
-- The caller computed, from `now` alone, which tiers count each hit and which counters
-- it adds to; that is exact when the heads the batch leaves (per tier, the newer of the
-- head and `need`, the newest slot the batch reaches) stay below `lim` (the oldest slot
-- it counts, plus the tier's slots). The caller also sends its guess of the key's finest
-- head (from its last reply, see src/store/redis/rate_heads.rs). Per key, in that case,
-- one Redis command (every argument a string the caller sent or one formatted once per
-- call: Lua turning a number into a string costs more than the command):
--
-- - guess -1 (a key the caller has not seen), when fresh: the whole ring by one
--   `SET .. PX .. NX` (heads at `need`, counters at what the batch adds);
-- - a guessed head below `need` (the head moves; nested tiers): one BITFIELD sets the
--   heads (the first SET answers the head it replaced: the guess is checked), clears the
--   slots the heads pass (the counters the batch adds to there set to their add) and adds
--   the rest under OVERFLOW FAIL; slots past SHORT on a tier are written after it, by
--   SETRANGE of their bytes. A wrong guess or a failed add: every op is undone from the
--   values the BITFIELD answered, and the key goes the general way below;
-- - otherwise one BITFIELD reads the heads (GETs first: the finest head alone when each
--   tier's slot is a multiple of the finest's, see heads_of) and adds the batch's counts
--   (INCRBYs, one per counter, under OVERFLOW FAIL). When no head moved, that is all;
--   when one did (the guess was missing or wrong), a second BITFIELD clears the slots it
--   passed, sets the counters of the new slots and the heads.
--
-- Otherwise (hits the batch itself pushes out of a tier, an add that fails) the heads
-- and the counters' values before the adds are known from that same reply, and the hits
-- are played in Lua on a sparse view of the ring, as below, then written with one
-- BITFIELD (the clears of the slots a head passed, the heads, every counter the adds
-- touched set to its value). A head that passes more than SHORT slots is cleared by
-- SETRANGE.
--
-- Should an add fail (a counter would pass 2^32 - 1), the others are undone and the
-- hits are played with the counters they only add to unread: their INCRBYs run first,
-- under OVERFLOW FAIL; should one fail again, the BITFIELD's other ops are undone from
-- the values it returned and the hits are played one at a time, each reading its
-- counters first, so an overflowing hit changes nothing and the others count, exactly
-- as one by one.
--
-- KEYS[1 .. K]  the rate keys (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  T, the number of tiers
-- ARGV[3 .. 2+2T]  per tier: slot length (ms), slots
-- then per key, in key order:
--   H, C, G         its hits, the counters they add to, the guess of its finest head
--                   as stored (slot + 1; -1: not known)
--   need[1 .. T]    per tier: the newest slot its hits reach (at least now's)
--   lim[1 .. T]     per tier: the oldest slot counted there, plus the tier's slots
--                   (9223372036854775807 when none)
--   C pairs         bit offset of a counter, what the hits add to it
--   H pairs         per hit: its time (unix ms), its count (1 .. 2^32-1)
--
-- The key expires when its newest slot leaves its longest tier (it then holds nothing),
-- set when that moment moves.
--
-- Returns per key: an empty table when its hits counted as the caller computed, else per
-- hit in order: the tiers that counted it (0: too late for every tier), or -1 when a
-- counter would pass 2^32 - 1; either way such a hit changed nothing. Then one more
-- table: per key, its finest head as stored after the call (-1: not known).

local key -- the key being played
local hits_at -- ARGV index of its first hit
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

-- `make` with its results kept by argument, each made once per call, and the table
-- that keeps them.
local function memo(make)
  local made = {}
  return function(v)
    local r = made[v]
    if r == nil then
      r = make(v)
      made[v] = r
    end
    return r
  end, made
end

-- Integers as command arguments, each formatted once per call (the same offsets, heads
-- and small counts recur from key to key).
local str, strs = memo(function(v) return string.format('%d', v) end)

-- Strings of `len` zero bytes (for SETRANGE).
local zeros = memo(function(len) return string.rep('\0', len) end)

-- Clears, by SETRANGE, the k positions of tier t from p on (wrapping past its last).
local function clear_slots(t, p, k)
  local part = min(k, n[t] - p)
  redis.call('SETRANGE', key, str(base[t] / 8 + 4 * p), zeros(4 * part))
  if k > part then
    redis.call('SETRANGE', key, str(base[t] / 8), zeros(4 * (k - part)))
  end
end

-- Every hit moves every tier's head to the slot of the same instant (the later of now
-- and its time; see ring.rs), so each head is that of one instant X, the latest ever
-- played: head t = floor(X / g[t]). When each tier's slot length is a multiple of the
-- finest's (the default tiers), head t = floor(head 1 * g[1] / g[t]): the first
-- BITFIELD reads the finest head only (each op it saves is ~0.25 us of Redis per key).
local nested = true
for t = 2, ntiers do
  if g[t] % g[1] ~= 0 then
    nested = false
  end
end
local nread = nested and 1 or ntiers

-- The BITFIELD ops that read the heads, then OVERFLOW FAIL for the adds after them.
local READ_HEADS = {}
for t = 1, nread do
  READ_HEADS[3 * t - 2], READ_HEADS[3 * t - 1], READ_HEADS[3 * t] = 'GET', 'i64', str(64 * (t - 1))
end
READ_HEADS[3 * nread + 1], READ_HEADS[3 * nread + 2] = 'OVERFLOW', 'FAIL'

-- The stored heads (slot + 1; 0 while empty) of every tier from the first BITFIELD's
-- reply.
local function heads_of(reply)
  if not nested then
    return reply
  end
  local heads, h1 = {}, reply[1]
  for t = 1, ntiers do
    if h1 == 0 then
      heads[t] = 0
    else
      heads[t] = floor((h1 - 1) * g[1] / g[t]) + 1
    end
  end
  return heads
end
-- Adding 0 to the last byte: a fresh key is made its full size at once, zeros.
local GROW_AT = str(8 * (size - 1))

-- Whether position p of tier t is among the k positions from `from` on.
local function within(t, p, from, k)
  return k >= n[t] or (p - from) % n[t] < k
end

-- Plays the key's hits `first` .. `last` (indexes from 0) into `results`. With `exact`, the
-- counters at the hits' slots are read first; without, the counters the batch only adds
-- to are not read, and the call answers false (its writes undone) if one overflows.
-- With `pre` (the first BITFIELD's reply, see play_key), the heads and every counter the
-- hits can add to are known already: nothing is read, and every such counter is written.
local function play(first, last, exact, results, pre)
  local fresh_key, heads = true, {}
  if pre then
    for t = 1, ntiers do
      heads[t] = pre.heads[t]
      if heads[t] ~= 0 then
        fresh_key = false
      end
    end
  else
    local raw = redis.call('GETRANGE', key, 0, 8 * ntiers - 1)
    fresh_key = #raw < 8 * ntiers
    local pos = 1
    for t = 1, ntiers do
      heads[t] = 0
      if not fresh_key then
        heads[t], pos = struct.unpack('>i8', raw, pos)
      end
    end
  end
  local h0, head = { false, false, false, false, false, false, false, false },
    { false, false, false, false, false, false, false, false }
  for t = 1, ntiers do
    local v = heads[t]
    if v ~= 0 then
      h0[t], head[t] = v - 1, v - 1
    end
  end
  -- By a counter's bit offset: known, its exact value (read, or cleared by this
  -- batch); add, what the batch adds to a counter it has not read.
  local known, add = {}, {}
  if pre then
    for b, v in pairs(pre.known) do
      known[b] = v
    end
  elseif exact and not fresh_key then
    local ops, no = {}, 0
    for i = first, last do
      local at = tonumber(ARGV[hits_at + 2 * i])
      for t = 1, ntiers do
        ops[no + 1], ops[no + 2], ops[no + 3] = 'GET', 'u32', str(base[t] + 32 * (floor(at / g[t]) % n[t]))
        no = no + 3
      end
    end
    local values = redis.call('BITFIELD', key, unpack(ops))
    for k = 1, #values do
      known[tonumber(ops[3 * k])] = values[k]
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
    local at = tonumber(ARGV[hits_at + 2 * i])
    local count = tonumber(ARGV[hits_at + 2 * i + 1])
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
    -- No head moved and nothing changed: with `pre`, the adds of the first BITFIELD
    -- are undone.
    local ops, no = {}, 0
    for b, v in pairs(known) do
      if pre then
        ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', str(b), str(v)
        no = no + 4
      end
    end
    if no > 0 then
      redis.call('BITFIELD', key, unpack(ops, 1, no))
    end
    return true
  end

  -- The writes: blind adds first (under OVERFLOW FAIL), then clears, heads, values.
  local ops, no = { 'OVERFLOW', 'FAIL' }, 2
  local added, long, cleared = {}, {}, {}
  for b, a in pairs(add) do
    ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'INCRBY', 'u32', str(b), str(a)
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
          ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', str(b), '0'
          no = no + 4
          cleared[#cleared + 1] = b
        end
      end
    end
  end
  for t = 1, ntiers do
    if head[t] ~= h0[t] then
      ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] =
        'SET', 'i64', str(64 * (t - 1)), str(head[t] + 1)
      no = no + 4
    end
  end
  for b, v in pairs(known) do
    if v > 0 or pre then
      ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', str(b), str(v)
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
        ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'INCRBY', 'u32', str(added[i]), str(-add[added[i]])
        no = no + 4
      end
    end
    if all then
      for t = 1, ntiers do
        if head[t] ~= h0[t] then
          ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] =
            'SET', 'i64', str(64 * (t - 1)), str((h0[t] or -1) + 1)
          no = no + 4
        end
      end
      for i = 1, #cleared do
        ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'SET', 'u32', str(cleared[i]), str(done[#added + i])
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

  if fresh_key and not pre then
    -- The whole ring at once (the adds of a first BITFIELD made a shorter string, which
    -- growing would over-allocate).
    redis.call('SET', key, zeros(size))
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
    clear_slots(t, (h0[t] + 1) % n[t], min(head[t] - h0[t], n[t]))
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

-- The bytes of `len` bytes of the ring from byte `lo` on: zeros, but the counters of
-- `cells` (byte offset, count as sent; sorted by offset) that lie there.
local function image(lo, len, cells)
  local parts, np, at = {}, 0, lo
  for _, cell in ipairs(cells) do
    local o = cell[1]
    if o >= lo and o < lo + len then
      if o > at then
        np = np + 1
        parts[np] = zeros(o - at)
      end
      np = np + 1
      parts[np] = struct.pack('>I4', tonumber(cell[2]))
      at = o + 4
    end
  end
  if lo + len > at then
    np = np + 1
    parts[np] = zeros(lo + len - at)
  end
  return table.concat(parts, '', 1, np)
end

-- The moment the key empties with these heads (slot per tier, or false while empty).
local function empties_at(heads)
  local u = 0
  for t = 1, ntiers do
    if heads[t] then
      u = math.max(u, (heads[t] + 1 + n[t]) * g[t])
    end
  end
  return u
end

-- Scratch tables reused from key to key (a table made per key costs more than the
-- command): the ops of a BITFIELD, what its SETs replaced, per tier the heads before
-- and after, per counter whether a moved head passed it, the counters of an image.
local OPS, SET_TYPE, SET_OFF, SET_WAS = {}, {}, {}, {}
local need, lim = { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 }
local h, H = { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 }
local passed, slot_cell, sorted = {}, {}, {}

-- Orders {byte offset, add} pairs by offset.
local function by_offset(x, y) return x[1] < y[1] end

-- The key's counters (bit offset and add, as sent, from ARGV[cells_at] on) that `take`
-- accepts (by index), sorted by offset, as {byte offset, add} pairs in `sorted`;
-- returns how many.
local function sort_cells(cells_at, ncells, take)
  local ns = 0
  for c = 1, ncells do
    if take(c) then
      ns = ns + 1
      local cell = sorted[ns]
      if not cell then
        cell = {}
        sorted[ns] = cell
      end
      cell[1], cell[2] = tonumber(ARGV[cells_at + 2 * c - 2]) / 8, ARGV[cells_at + 2 * c - 1]
    end
  end
  for i = ns + 1, #sorted do
    sorted[i] = nil
  end
  table.sort(sorted, by_offset)
  return ns
end

-- Whether every add of the key's counters fits a counter (at most 2^32 - 1) by itself.
local function adds_fit(cells_at, ncells)
  for c = 1, ncells do
    if tonumber(ARGV[cells_at + 2 * c - 1]) > MAX_COUNT then
      return false
    end
  end
  return true
end

local function take_all() return true end
local function take_passed(c) return passed[c] end

-- Fresh rings by the record that makes them (heads and counters as sent): the keys of
-- one call hit at now make the same few (a string built in Lua costs more than the
-- command).
local rings = {}

-- A key the caller has not seen (guess -1), when fresh: the whole ring in one
-- `SET .. PX .. NX`: the heads at `need`, every counter the batch adds to set to its add.
-- The same bytes and expiry as the general path makes of a fresh key. Answers false,
-- having changed nothing, when the key exists.
local function play_fresh(need_at, cells_at, ncells)
  local record = table.concat(ARGV, ',', need_at, need_at + ntiers - 1) .. '|' ..
    table.concat(ARGV, ',', cells_at, cells_at + 2 * ncells - 1)
  local ring = rings[record]
  if not ring then
    local bytes = {}
    for t = 1, ntiers do
      H[t] = need[t]
      bytes[t] = struct.pack('>i8', need[t] + 1)
    end
    sort_cells(cells_at, ncells, take_all)
    bytes[ntiers + 1] = image(8 * ntiers, size - 8 * ntiers, sorted)
    ring = { table.concat(bytes), str(math.max(1, empties_at(H) - now)) }
    rings[record] = ring
  end
  return redis.call('SET', key, ring[1], 'PX', ring[2], 'NX') ~= false
end

-- A key whose finest head the caller guessed at h1 (below the batch's `need`: the head
-- moves), nested tiers: one `BITFIELD` that sets the heads (each SET answering the value
-- it replaced: the first one checks the guess), clears the slots the heads pass (counters
-- the batch adds to there set to their add), adds the rest (under OVERFLOW FAIL). Slots
-- past SHORT on a tier are written after, by SETRANGE of their bytes. When the guess was
-- wrong or an add failed, every op is undone from the values it answered and the call
-- answers false, having changed nothing.
local function play_guessed(h1, need, lim, cells_at, ncells)
  for t = 1, ntiers do
    h[t] = floor(h1 * g[1] / g[t])
    H[t] = math.max(h[t], need[t])
    if H[t] >= lim[t] then
      return false
    end
  end
  for c = 1, ncells do
    passed[c] = false
  end
  local no, nsets, long = 0, 0, nil
  for t = 1, ntiers do
    if H[t] > h[t] then
      OPS[no + 1], OPS[no + 2], OPS[no + 3], OPS[no + 4] = 'SET', 'i64', str(64 * (t - 1)), str(H[t] + 1)
      no = no + 4
      nsets = nsets + 1
      SET_TYPE[nsets], SET_OFF[nsets], SET_WAS[nsets] = 'i64', str(64 * (t - 1)), h[t] + 1
    end
  end
  for t = 1, ntiers do
    if H[t] > h[t] then
      local k = min(H[t] - h[t], n[t])
      local p = (h[t] + 1) % n[t]
      local lo, hi = base[t], base[t] + 32 * n[t]
      for j = 0, min(k, SHORT) - 1 do
        slot_cell[j] = false
      end
      for c = 1, ncells do
        local b = tonumber(ARGV[cells_at + 2 * c - 2])
        if b >= lo and b < hi and within(t, (b - lo) / 32, p, k) then
          passed[c] = true
          slot_cell[((b - lo) / 32 - p) % n[t]] = c
        end
      end
      if k > SHORT then
        long = long or {}
        long[#long + 1] = t
      else
        -- Each slot passed set to 0, or to what the batch adds there.
        for j = 0, k - 1 do
          local b, c = str(lo + 32 * ((p + j) % n[t])), slot_cell[j]
          OPS[no + 1], OPS[no + 2], OPS[no + 3], OPS[no + 4] = 'SET', 'u32', b, c and ARGV[cells_at + 2 * c - 1] or '0'
          no = no + 4
          nsets = nsets + 1
          SET_TYPE[nsets], SET_OFF[nsets], SET_WAS[nsets] = 'u32', b, false
        end
      end
    end
  end
  OPS[no + 1], OPS[no + 2] = 'OVERFLOW', 'FAIL'
  no = no + 2
  local nadds = 0
  for c = 1, ncells do
    if not passed[c] then
      OPS[no + 1], OPS[no + 2], OPS[no + 3], OPS[no + 4] = 'INCRBY', 'u32', ARGV[cells_at + 2 * c - 2], ARGV[cells_at + 2 * c - 1]
      no = no + 4
      nadds = nadds + 1
    end
  end
  local reply = redis.call('BITFIELD', key, unpack(OPS, 1, no))
  local right = true
  for i = 1, nsets do
    if SET_WAS[i] and reply[i] ~= SET_WAS[i] then
      right = false
    end
  end
  for i = nsets + 1, nsets + nadds do
    if not reply[i] then
      right = false
    end
  end
  if not right then
    local undo, nu = {}, 0
    local i = nsets + nadds
    for c = ncells, 1, -1 do
      if not passed[c] then
        if reply[i] then
          undo[nu + 1], undo[nu + 2], undo[nu + 3], undo[nu + 4] = 'INCRBY', 'u32', ARGV[cells_at + 2 * c - 2], '-' .. ARGV[cells_at + 2 * c - 1]
          nu = nu + 4
        end
        i = i - 1
      end
    end
    for j = nsets, 1, -1 do
      undo[nu + 1], undo[nu + 2], undo[nu + 3], undo[nu + 4] = 'SET', SET_TYPE[j], SET_OFF[j], str(reply[j])
      nu = nu + 4
    end
    redis.call('BITFIELD', key, unpack(undo, 1, nu))
    return false
  end
  if long then
    sort_cells(cells_at, ncells, take_passed)
    for _, t in ipairs(long) do
      local k = min(H[t] - h[t], n[t])
      local p = (h[t] + 1) % n[t]
      local part = min(k, n[t] - p)
      local lo = base[t] / 8
      redis.call('SETRANGE', key, str(lo + 4 * p), image(lo + 4 * p, 4 * part, sorted))
      if k > part then
        redis.call('SETRANGE', key, str(lo), image(lo, 4 * (k - part), sorted))
      end
    end
  end
  local until_old, until_new = empties_at(h), empties_at(H)
  if until_new ~= until_old then
    redis.call('PEXPIRE', key, str(math.max(1, until_new - now)))
  end
  return true
end

-- Plays one key's hits, its record starting at ARGV[a]; returns its reply, where the
-- next key's record starts, and its finest head as stored after (slot + 1; -1 when not
-- known: the caller forgets its guess).
local function play_key(a)
  local nhits, ncells, guess = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local need_at, lim_at, cells_at = a + 3, a + 3 + ntiers, a + 3 + 2 * ntiers
  hits_at = cells_at + 2 * ncells
  if ncells == 0 then
    -- Every hit too late for every tier, even before any head moves: nothing changes.
    return {}, hits_at + 2 * nhits, -1
  end
  local next_key = hits_at + 2 * nhits
  for t = 1, ntiers do
    need[t] = tonumber(ARGV[need_at + t - 1])
    lim[t] = tonumber(ARGV[lim_at + t - 1])
  end
  if guess < 0 or (nested and guess > 0 and guess - 1 < need[1]) then
    if adds_fit(cells_at, ncells) then
      if guess < 0 then
        local within_lim = true
        for t = 1, ntiers do
          if need[t] >= lim[t] then
            within_lim = false
          end
        end
        if within_lim and play_fresh(need_at, cells_at, ncells) then
          return {}, next_key, need[1] + 1
        end
      elseif play_guessed(guess - 1, need, lim, cells_at, ncells) then
        return {}, next_key, need[1] + 1
      end
    end
  end
  local ops, no = OPS, #READ_HEADS
  for i = 1, no do
    ops[i] = READ_HEADS[i]
  end
  for c = 0, ncells - 1 do
    ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] =
      'INCRBY', 'u32', ARGV[cells_at + 2 * c], ARGV[cells_at + 2 * c + 1]
    no = no + 4
  end
  ops[no + 1], ops[no + 2], ops[no + 3], ops[no + 4] = 'INCRBY', 'u8', GROW_AT, '0'
  local reply = redis.call('BITFIELD', key, unpack(ops, 1, no + 4))
  -- The counters' values after the adds are reply[nread + 1 ..].
  local heads = heads_of(reply)
  -- As computed when, per tier, the head the hits leave (the newer of the head and
  -- `need`) stays below `lim`: no hit's slot leaves the ring, and the heads moved
  -- (if at all) past slots no hit of the batch is in but the new ones.
  local as_computed, moved, overflow = true, false, false
  for t = 1, ntiers do
    local h = heads[t] - 1
    if h < need[t] then
      moved = true
      h = need[t]
    end
    if h >= lim[t] then
      as_computed = false
    end
  end
  for c = 1, ncells do
    if not reply[nread + c] then
      as_computed, overflow = false, true
    end
  end
  local head = math.max(heads[1] - 1, need[1]) + 1
  if as_computed and not moved then
    return {}, next_key, head
  end
  if as_computed then
    -- Per tier whose head moves: clear the slots it passes (a fresh tier is zeros
    -- already), set the counters of the new slots to what the hits add, set the head.
    local fix, nfix = {}, 0
    local until_old, until_new = 0, 0
    for t = 1, ntiers do
      local h = heads[t] - 1
      if h >= 0 then
        until_old = math.max(until_old, (h + 1 + n[t]) * g[t])
      end
      until_new = math.max(until_new, (math.max(h, need[t]) + 1 + n[t]) * g[t])
      if h < need[t] then
        if h >= 0 then
          local k = min(need[t] - h, n[t])
          local p = (h + 1) % n[t]
          if k > SHORT then
            clear_slots(t, p, k)
          else
            for j = 0, k - 1 do
              fix[nfix + 1], fix[nfix + 2], fix[nfix + 3], fix[nfix + 4] =
                'SET', 'u32', str(base[t] + 32 * ((p + j) % n[t])), '0'
              nfix = nfix + 4
            end
          end
          local hi = base[t] + 32 * n[t]
          for c = 0, ncells - 1 do
            local b = tonumber(ARGV[cells_at + 2 * c])
            if b >= base[t] and b < hi and within(t, (b - base[t]) / 32, p, k) then
              fix[nfix + 1], fix[nfix + 2], fix[nfix + 3], fix[nfix + 4] =
                'SET', 'u32', ARGV[cells_at + 2 * c], ARGV[cells_at + 2 * c + 1]
              nfix = nfix + 4
            end
          end
        end
        fix[nfix + 1], fix[nfix + 2], fix[nfix + 3], fix[nfix + 4] =
          'SET', 'i64', str(64 * (t - 1)), str(need[t] + 1)
        nfix = nfix + 4
      end
    end
    redis.call('BITFIELD', key, unpack(fix, 1, nfix))
    if until_new ~= until_old then
      redis.call('PEXPIRE', key, str(math.max(1, until_new - now)))
    end
    return {}, next_key, head
  end
  local results = {}
  if not overflow then
    local pre = { heads = heads, known = {} }
    for c = 0, ncells - 1 do
      local off = ARGV[cells_at + 2 * c]
      local b = tonumber(off)
      strs[b] = off
      pre.known[b] = reply[nread + 1 + c] - tonumber(ARGV[cells_at + 2 * c + 1])
    end
    play(0, nhits - 1, true, results, pre)
    return results, next_key, -1
  end
  -- An add failed: undo the others, then play as if they had never been sent.
  local undo, nundo = {}, 0
  for c = 0, ncells - 1 do
    if reply[nread + 1 + c] then
      undo[nundo + 1], undo[nundo + 2], undo[nundo + 3], undo[nundo + 4] =
        'INCRBY', 'u32', ARGV[cells_at + 2 * c], '-' .. ARGV[cells_at + 2 * c + 1]
      nundo = nundo + 4
    end
  end
  if nundo > 0 then
    redis.call('BITFIELD', key, unpack(undo, 1, nundo))
  end
  if not play(0, nhits - 1, false, results) then
    for i = 0, nhits - 1 do
      play(i, i, true, results)
    end
  end
  return results, next_key, -1
end

local replies, heads = {}, {}
local a = 3 + 2 * ntiers
for k = 1, #KEYS do
  key = KEYS[k]
  replies[k], a, heads[k] = play_key(a)
end
replies[#KEYS + 1] = heads
return replies
