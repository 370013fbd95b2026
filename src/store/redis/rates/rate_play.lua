-- rate_play.lua, the second part of rate_hits.lua (sent after it, as one script): how
-- one key's hits are played on its ring when no fast path takes them.

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
