-- retire_small.lua: retire small boards whole, every window, several in one bounded call.
--
-- ARGV[1] is how many boards the call retires; then, per board, how many keys and how many
-- arguments it has and its arguments, and its keys follow those of the board before it.
-- A board with one argument (its version) shares the other arguments of the board
-- before it that has them all (boards of one configuration, at one boundary, differ in
-- their keys and versions only: each argument costs Redis a string to make).
-- Each board's keys and arguments, as `retire` below sees them (its KEYS and ARGV):
--
-- KEYS[1]            board record            board_{b}
-- KEYS[2]            slot index              slots_{b}
-- KEYS[3]            slot geometries         slotgeo_{b} (compact slots, see prelude)
-- KEYS[3+j]          window j's totals       stats_{b} or stats_{b}_<W>     (j = 1..n)
-- KEYS[3+n+(c-1)n+j] candidate slot c's stage for window j: slot_{b}_<ts> (j = 1) or
--                    slot_{b}_<ts>_<j-1>                          (c = 1..m, j = 1..n);
--                    on a compact slot the prefix of its buckets <key>:<i>
-- KEYS[3+n+mn+k]     the closed slot's stage k (k = 1..n), named as above: the slot that
--                    just closed (the current slot's start - the slot length); absent
--                    when that slot is a candidate (its stages are the candidate's),
--                    so the keys below come n earlier
-- KEYS[4+2n+mn]      member data             data_{b}: retiring the largest window
--                    deletes the data of each member whose total it takes to 0
--
-- ARGV[1]            board version the caller expects
-- ARGV[2]            n, the board's windows
-- ARGV[3]            m, the candidate slots
-- ARGV[4]            most fields this call may handle (its bound)
-- ARGV[4+j]          window j, seconds (fields wm:<W>, done:<W>), smallest first
-- ARGV[4+n+j]        window j's cutoff: every slot at or before it has left window j
-- ARGV[4+2n+c]       candidate slot c's start
-- ARGV[5+2n+m]       the closed slot's start
-- ARGV[6+2n+m]       the minimum fields worth compacting ('' asks nothing, see below)
-- ARGV[7+2n+m]       the store's default layout, for a record that names none
--
-- Does, in one atomic call, what retire_begin.lua and retire_chunk.lua do window by
-- window, smallest first: moves each window's watermark up to its cutoff, subtracts from
-- its totals every slot in (done:<W>, cutoff] (members reaching exactly 0 removed), adds
-- it to the slot's next stage (which the next window subtracts, in this same call when it
-- is due too) and deletes it, marks the window retired through its cutoff, and drops from
-- the index the slots the largest window retired. The caller names the slots it expects
-- to be due (those that crossed a cutoff at the boundary), since every key is passed in.
-- A slot's geometry is read only when the record lacks plain_slots (create_board.lua sets
-- it; the first call that gives a slot a geometry deletes it, in the same atomic step).
-- Each stage hash (a compact slot's each bucket, as retire_chunk.lua does) is read whole,
-- subtracted, and handed on by one RENAMENX when the next stage has no such hash (merged
-- otherwise); a compact slot's geometry goes with its index entry. A compact slot of more
-- than MAX_BUCKETS buckets is not small. When no live slot is newer than window 1's
-- cutoff, window 1's totals are exactly empty once its due slots left (docs/design.md,
-- "Many boards"): they are deleted whole, and its stage hashes handed on unread.
--
-- It first checks, changing nothing, that the call fits: every slot due is a candidate,
-- and the fields to handle (each stage's size plus what the smaller window moves into it)
-- are at most ARGV[4]. Otherwise it answers {'fallback', reason} having done nothing, and
-- the caller retires the board window by window in chunks (a big board, a board behind by
-- more than one boundary, a recompute holding its lease). Exact and idempotent: a second
-- call, from any retirer, finds nothing due and changes nothing.
-- Compaction (docs/compact-slots.md, "Compact slots"): write.lua creates a compact board's open
-- slot plain, so, once it retired the board, the call also says whether the slot that
-- just closed should be compacted: the board's layout (its record's, else ARGV[7+2n+m])
-- is compact, the slot is live and has no geometry, and its largest stage has at least
-- ARGV[6+2n+m] fields (fewer fit one listpack anyway). The caller then converts it with
-- relayout_chunk.lua. Asking costs no extra round trip, and mostly no command: the sizes
-- of the stages this call measured or renamed into are known, and a later stage k holds
-- none of a slot that just closed unless window k-1 was frozen past it (by this call,
-- whose sizes are known, or before it: then measured), as writes and retirement put a
-- slot's fields in the stage of the smallest window not frozen past it.
-- A board's answer: {'done', (window, slot) pairs retired, fields subtracted, members
-- zeroed, compact (1: compact the closed slot, else 0)}, or {'fallback', reason}
-- ('stale': board missing, dropped or of another version; 'later': the call's bound was
-- spent on the boards before it, which left it unchanged). The call returns the boards'
-- answers in order. Its bound: it takes boards while the fields they handled stay within
-- the first board's ARGV[4] (the first board always runs, so every call makes progress,
-- and none handles more than about twice that bound). On a Cluster the boards of one call
-- share a hash slot.

local MAX_BUCKETS = 64

-- The numbers of the call's strings, each converted once: the boards of a call share
-- their windows, cutoffs, slot starts and retired-through marks, and a tonumber of a
-- 10-digit string costs Redis about a thousand instructions (glibc's exact strtod).
local numbers = {}
local function num(s)
  local v = numbers[s]
  if v == nil then
    v = tonumber(s)
    if s then numbers[s] = v end
  end
  return v
end

-- The hashes that hold stage `key` of a slot of geometry `g` (none: plain): the stage
-- hash, and on a compact slot its buckets (a compact slot's plain stage hash exists only
-- while an active relayout converts it, docs/compact-slots.md, "Relayout": each form is
-- handed on to the same form of the next stage; the call is atomic, so their order does
-- not matter).
-- They fill `into` (a scratch list, see `retire`), and the function answers how many.
local function stage_hashes(key, g, into)
  into[1] = key
  if not g then return 1 end
  local count = bucket_count(g)
  for i = 0, count - 1 do into[i + 2] = bucket_key(key, i) end
  return count + 1
end

-- What the boards sharing the arguments after ARGV[a] have in common: the record fields
-- to read (fields) and the number of each candidate slot by its start (candidates).
local function shape_of(a)
  local n, m = num(ARGV[a + 2]), num(ARGV[a + 3])
  local fields, candidates = {}, {}
  for j = 1, n do
    fields[2 * j - 1], fields[2 * j] = 'wm:' .. ARGV[a + 4 + j], 'done:' .. ARGV[a + 4 + j]
  end
  fields[2 * n + 1], fields[2 * n + 2], fields[2 * n + 3] = 'rb_until', 'layout', 'plain_slots'
  for c = 1, m do candidates[ARGV[a + 4 + 2 * n + c]] = c end
  return { fields = fields, candidates = candidates, limit = tostring(m + 2) }
end

-- Retires one board of version `version`, whose keys follow KEYS[k] and other arguments
-- ARGV[a] (its KEYS[1] and ARGV[2] in the header are KEYS[k + 1] and ARGV[a + 2] here;
-- `shape` is shape_of(a)); also the fields it handled. Written without closures or
-- copies of its keys, and its lists are the call's `scratch` tables, emptied here: a call
-- runs it for up to 32 boards, and each table, string or function made costs Redis about
-- as much as a command (a table 0.46 µs, a command called from Lua 0.48).
local function retire(k, a, version, shape, scratch)
  local board, index, geo_key = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local n, m, max_fields = num(ARGV[a + 2]), num(ARGV[a + 3]), num(ARGV[a + 4])
  -- Window j is ARGV[W + j], its cutoff ARGV[C + j], its totals KEYS[T + j]; candidate c's
  -- start is ARGV[C + n + c] and its stage j KEYS[T + n + (c - 1) * n + j].
  local W, C, T = a + 4, a + 4 + n, k + 3
  local S = T + n
  local fields, candidates = shape.fields, shape.candidates
  -- record[1 + 2j] is window j's watermark, record[2 + 2j] what it retired through.
  local record = board_record(board, version, unpack(fields))
  if lease_held(record[3 + 2 * n]) then return { 'fallback', 'recomputing' } end

  -- Each candidate's geometry (false or nil: a plain slot), read unless the record says
  -- no slot has one (plain_slots: see the header).
  local geo = scratch.none
  if record[5 + 2 * n] ~= '1' then
    geo = redis.call('HMGET', geo_key, unpack(ARGV, C + n + 1, C + n + m))
    for c = 1, m do geo[c] = parse_geometry(geo[c]) or false end
  end

  -- The plan, changing nothing: the (window, candidate, slot) triples due, oldest slot
  -- first within each window (plan[3q - 2], plan[3q - 1], plan[3q], q = 1..planned), and
  -- a bound on the fields they hold. `sizes` keeps the size of each stage hash measured
  -- or renamed into (false: merged into, to be measured); `carried` each candidate's
  -- fields so far; `here` and `after` list a stage's hashes.
  local plan, carried, sizes, here, after = scratch.plan, scratch.carried, scratch.sizes,
    scratch.here, scratch.after
  for key in pairs(sizes) do sizes[key] = nil end
  for c = 1, m do carried[c] = nil end
  local planned, work = 0, 0
  -- The first m + 2 live slots after the lowest retired-through mark: on a board with few
  -- live slots, every window's due slots, and whether any is newer than window 1's
  -- cutoff, in one command. A window this list does not cover through its cutoff reads
  -- its own (window 1: past its cutoff too); more than m due ends in 'slots'.
  local low = 4
  for j = 2, n do
    if num(record[2 + 2 * j]) < num(record[low]) then low = 2 + 2 * j end
  end
  local live = redis.call('ZRANGEBYSCORE', index, '(' .. record[low], '+inf', 'LIMIT', '0',
    shape.limit)
  -- Whether window 1's totals are exactly empty once it retires its due slots: no live
  -- slot is newer than its cutoff (the stage invariant, as retire_swap.lua's); then they
  -- are deleted whole instead of subtracted.
  -- Window 1 only, and not the largest (whose zeroed members lose their data), on a board
  -- that hides nothing and has no review gate (whose steps see each member).
  local empties = n > 1 and not (hidden_members or review_rank)
  for j = 1, n do
    local done, cutoff = num(record[2 + 2 * j]), num(ARGV[C + j])
    local due = live
    if #live == m + 2 and num(live[m + 2]) <= cutoff then
      due = redis.call('ZRANGEBYSCORE', index, '(' .. record[2 + 2 * j],
        j == 1 and '+inf' or ARGV[C + j], 'LIMIT', '0', shape.limit)
    end
    for _, slot in ipairs(due) do
      local at = num(slot)
      if at > cutoff then
        if j == 1 then empties = false end
        break
      end
      if at > done then
        local c = candidates[slot]
        if not c then return { 'fallback', 'slots' } end
        local g = geo[c]
        if g and bucket_count(g) > MAX_BUCKETS then return { 'fallback', 'big' } end
        local size = carried[c] or 0
        for h = 1, stage_hashes(KEYS[S + (c - 1) * n + j], g, here) do
          local key = here[h]
          sizes[key] = redis.call('HLEN', key)
          size = size + sizes[key]
        end
        carried[c] = size
        work = work + size
        if work > max_fields then return { 'fallback', 'big' } end
        planned = planned + 1
        plan[3 * planned - 2], plan[3 * planned - 1], plan[3 * planned] = j, c, slot
      end
    end
  end

  -- The record's fields to set (watermarks, retired-through marks), in one HSET at the end.
  local marks, marked = scratch.marks, 0
  local subtracted, zeroed, p = 0, 0, 1
  -- The closed slot's stages, its candidate's when it is one (see the header).
  local closed = ARGV[C + n + m + 1]
  local closed_c = candidates[closed]
  local closed_at = closed_c and (S + (closed_c - 1) * n) or (S + m * n)
  local data = KEYS[S + m * n + (closed_c and 0 or n) + 1]
  for j = 1, n do
    local cutoff = ARGV[C + j]
    if num(record[1 + 2 * j]) < num(cutoff) then
      marks[marked + 1], marks[marked + 2], marked = fields[2 * j - 1], cutoff, marked + 2
    end
    -- Emptied (see `empties`): each member it counts reaches 0.
    local emptied = j == 1 and empties and p <= planned and plan[3 * p - 2] == 1
    if emptied then zeroed = redis.call('ZREMRANGEBYRANK', KEYS[T + 1], '0', '-1') end
    while p <= planned and plan[3 * p - 2] == j do
      local c, slot = plan[3 * p - 1], plan[3 * p]
      local g, stage = geo[c], S + (c - 1) * n
      local handed = j < n and stage_hashes(KEYS[stage + j + 1], g, after) or 0
      for h = 1, stage_hashes(KEYS[stage + j], g, here) do
        local key = here[h]
        -- An emptied window's stage is handed on unread (its size measured by the plan).
        local names, values, count = nil, nil, sizes[key]
        if not emptied then
          names, values = fields_and_values(redis.call('HGETALL', key))
          count = #names
          if count > 0 then
            zeroed = zeroed + bulk_add(KEYS[T + j], true, -1, names, values, nil, nil,
              j == n and data or nil)
          end
        end
        if count > 0 then
          local to = h <= handed and after[h] or nil
          if hand_on(key, to, names, values) then
            sizes[to] = count
          elseif to then
            sizes[to] = false
          end
          sizes[key] = 0
          subtracted = subtracted + count
        end
      end
      if j == n then
        redis.call('ZREM', index, slot)
        if g then redis.call('HDEL', geo_key, slot) end
      end
      p = p + 1
    end
    if num(record[2 + 2 * j]) < num(cutoff) then
      marks[marked + 1], marks[marked + 2], marked = fields[2 * j], cutoff, marked + 2
    end
  end
  if marked > 0 then redis.call('HSET', board, unpack(marks, 1, marked)) end
  gate(board)
  -- Every slot retired left its windows by the boundary window 1's cutoff + its length.
  record_changes(board, 'retire', nil, (num(ARGV[C + 1]) + num(ARGV[W + 1])) * 1000)

  -- Whether the slot that just closed should be compacted (see the header).
  local compact = 0
  local minimum = num(ARGV[C + n + m + 2] or '')
  if minimum and (record[4 + 2 * n] or ARGV[C + n + m + 3]) == 'compact' then
    -- The sizes first: most closed slots of a small board are too small, and that ends it.
    local big = false
    for st = 1, n do
      local key = KEYS[closed_at + st]
      local size = sizes[key]
      local may_hold = st == 1 or num(record[2 * st - 1]) >= num(closed)
      if size == false or (size == nil and may_hold) then
        size = redis.call('HLEN', key)
      end
      if size and size >= minimum then
        big = true
        break
      end
    end
    if big and redis.call('ZSCORE', index, closed) then
      compact = redis.call('HEXISTS', geo_key, closed) == 1 and 0 or 1
    end
  end
  return { 'done', planned, subtracted, zeroed, compact }, subtracted
end

local answers, spent, bound = {}, 0, nil
-- The lists every board's retirement fills anew (see `retire`), and an empty table
-- (`none`: the geometries of a board whose slots are all plain).
local scratch = { plan = {}, carried = {}, sizes = {}, marks = {}, here = {}, after = {},
  none = {} }
-- The next board's keys follow KEYS[k], its counts and arguments ARGV[a]; the arguments
-- of the last board that had them all follow ARGV[shared].
local k, a, shared, shape = 0, 1, nil, nil
for b = 1, tonumber(ARGV[1]) do
  local nkeys, nargs = num(ARGV[a + 1]), num(ARGV[a + 2])
  if nargs > 1 then shared, shape = a + 2, nil end
  bound = bound or num(ARGV[shared + 4])
  if spent > bound then
    answers[b] = { 'fallback', 'later' }
  else
    shape = shape or shape_of(shared)
    local ok, answer, handled = pcall(retire, k, shared, ARGV[a + 3], shape, scratch)
    if not ok then
      -- A board refused (refuse: STALE) is answered so; any other error fails the call.
      if not (type(answer) == 'table' and string.find(answer.err or '', '^STALE')) then
        error(answer)
      end
      answer = { 'fallback', 'stale' }
    end
    answers[b], spent = answer, spent + (handled or 0)
  end
  k, a = k + nkeys, a + 2 + nargs
end
return answers
