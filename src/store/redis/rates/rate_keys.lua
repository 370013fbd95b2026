-- rate_keys.lua, the last part of rate_hits.lua (sent after rate_play.lua): the fast
-- paths of a fresh key and of a key whose head the caller guessed, then the loop over
-- the call's keys.

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
