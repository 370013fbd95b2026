-- retire_small.lua: retire small boards whole, every window, several in one bounded call.
--
-- ARGV[1] is how many boards the call retires; then, per board, '*' and its arguments,
-- or only its version when its other arguments are those of the board before it
-- (boards of one configuration, at one boundary, differ in their keys and versions only:
-- each argument costs Redis a string to make). Its keys follow those of the board
-- before it: 4 + n + mn of them, n more when the closed slot is no candidate (below).
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
-- slot's fields in the stage of the smallest window not frozen past it. The record's
-- layout is read last, when a stage is big enough (unless the store's default is not
-- compact): most records name none, and an absent field costs Redis a look at every
-- field of the record.
-- A board's answer is five values: 'done', (window, slot) pairs retired, fields
-- subtracted, members zeroed, compact (1: compact the closed slot, else 0); or
-- 'fallback', reason, 0, 0, 0 ('stale': board missing, dropped or of another version;
-- 'later': the call's bound was spent on the boards before it, which left it unchanged).
-- The call returns the boards' answers in order, in one flat list (a table a board
-- costs Redis about as much as a command). Its bound: it takes boards while the fields
-- they handled stay within the first board's ARGV[4] (the first board always runs, so
-- every call makes progress, and none handles more than about twice that bound). On a
-- Cluster the boards of one call share a hash slot.

local MAX_BUCKETS = 64

-- KEYS, ARGV, redis.call and unpack as locals: a global costs Redis a table lookup each
-- time it is named (about a hundred instructions), a local captured by a function less.
local KEYS, ARGV, call, unpack = KEYS, ARGV, redis.call, unpack

-- The numbers of the call's strings, each converted once: the boards of a call share
-- their windows, cutoffs, slot starts and retired-through marks, and a tonumber of a
-- 10-digit string costs Redis about a thousand instructions (glibc's exact strtod).
-- Read as `numbers[s] or num(s)`: a cached number costs one lookup, no call.
local numbers = {}
local function num(s)
  local v = numbers[s]
  if v == nil then
    v = tonumber(s)
    if s then numbers[s] = v end
  end
  return v
end

-- '(' .. s (an exclusive bound) by s, made once a call.
local exclusive = {}

-- The hashes that hold stage `key` of a compact slot of geometry `g`: the stage hash and
-- its buckets (a compact slot's plain stage hash exists only while an active relayout
-- converts it, docs/compact-slots.md, "Relayout": each form is handed on to the same
-- form of the next stage; the call is atomic, so their order does not matter).
-- They fill `into` (a scratch list, see `retire`), and the function answers how many.
local function bucket_hashes(key, g, into)
  into[1] = key
  local count = bucket_count(g)
  for i = 0, count - 1 do into[i + 2] = bucket_key(key, i) end
  return count + 1
end

-- What the boards sharing the arguments after ARGV[a] have in common, each read once: the
-- windows n, candidates m and bound; the record fields to read (fields: the watermark
-- and retired-through mark of each window, plain_slots, and the layout when the
-- store's default is not compact, see the compaction below); each window's cutoff, as a
-- number; the number of each candidate slot by its start (candidates); the closed slot
-- (its start, as a string and a number, and its candidate number if it is one); the
-- least fields worth compacting; when its changes happened (ms); and how many keys and
-- arguments a board of this shape has.
local function shape_of(a)
  local n, m = num(ARGV[a + 2]), num(ARGV[a + 3])
  local C = a + 4 + n
  local fields, cutoffs, candidates = {}, {}, {}
  for j = 1, n do
    fields[2 * j - 1], fields[2 * j] = 'wm:' .. ARGV[a + 4 + j], 'done:' .. ARGV[a + 4 + j]
    cutoffs[j] = num(ARGV[C + j])
  end
  local default_layout = ARGV[C + n + m + 3]
  fields[2 * n + 1] = 'plain_slots'
  if default_layout ~= 'compact' then fields[2 * n + 2] = 'layout' end
  for c = 1, m do candidates[ARGV[C + n + c]] = c end
  local closed = ARGV[C + n + m + 1]
  return { n = n, m = m, bound = num(ARGV[a + 4]), fields = fields, cutoffs = cutoffs,
    nkeys = 4 + n + m * n + (candidates[closed] and 0 or n), nargs = 7 + 2 * n + m,
    C = C, candidates = candidates, limit = tostring(m + 2), closed = closed,
    closed_at = num(closed), closed_c = candidates[closed],
    minimum = num(ARGV[C + n + m + 2] or ''), default_layout = default_layout,
    at_ms = (cutoffs[1] + num(ARGV[a + 5])) * 1000 }
end

-- Retires one board of version `version`, whose keys follow KEYS[k] (its KEYS[1] in the
-- header is KEYS[k + 1] here) and whose other arguments `shape` read (shape_of); returns
-- the board's answer (see the header) as five values. Written without closures or
-- copies of its keys, and its lists are the call's `scratch` tables, reset here: a call
-- runs it for up to 32 boards, and each table, string or function made costs Redis about
-- as much as a command (a table 0.46 µs, a command called from Lua 0.48).
local function retire(k, version, shape, scratch)
  local board, index, geo_key = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local n, m, cutoffs, C = shape.n, shape.m, shape.cutoffs, shape.C
  -- Window j's totals are KEYS[T + j]; candidate c's stage j is KEYS[S + (c - 1) * n + j],
  -- and the closed slot's stage j, when it is no candidate, KEYS[S + m * n + j].
  local T = k + 3
  local S = T + n
  local candidates = shape.candidates
  -- record[1 + 2j] is window j's watermark, record[2 + 2j] what it retired through.
  local record = board_record(board, version, unpack(shape.fields))
  local lease = busy_fields(board, 'rb_until')
  if lease and lease_held(lease) then return 'fallback', 'recomputing' end

  -- Each candidate's geometry (false or nil: a plain slot), read unless the record says
  -- no slot has one (plain_slots: see the header).
  local geo = scratch.none
  if record[3 + 2 * n] ~= '1' then
    geo = call('HMGET', geo_key, unpack(ARGV, C + n + 1, C + n + m))
    for c = 1, m do geo[c] = parse_geometry(geo[c]) or false end
  end

  -- The plan, changing nothing: the (window, candidate, slot) triples due, oldest slot
  -- first within each window (plan[3q - 2], plan[3q - 1], plan[3q], q = 1..planned), and
  -- a bound on the fields they hold. `sizes` keeps the size of each stage hash measured
  -- or renamed into (false: merged into, to be measured), by a number: 128 times the
  -- stage's number (candidate c's stage j: (c - 1) * n + j; the closed slot's, when it is
  -- no candidate, m * n + j) plus the hash's (1: the stage hash, 2.. its buckets);
  -- `sized` lists the numbers set (`scratch.sized_count` of them), to reset them for the
  -- next board. `carried` keeps each candidate's fields so far; `here` and `after` list a
  -- stage's hashes.
  local plan, carried, sizes, sized, here, after = scratch.plan, scratch.carried,
    scratch.sizes, scratch.sized, scratch.here, scratch.after
  for t = 1, scratch.sized_count do sizes[sized[t]] = nil end
  scratch.sized_count = 0
  for c = 1, m do carried[c] = 0 end
  local planned, work, bound = 0, 0, shape.bound
  -- The first m + 2 live slots after the lowest retired-through mark: on a board with few
  -- live slots, every window's due slots, and whether any is newer than window 1's
  -- cutoff, in one command. A window this list does not cover through its cutoff reads
  -- its own (window 1: past its cutoff too); more than m due ends in 'slots'.
  local low = record[4]
  local low_at = numbers[low] or num(low)
  for j = 2, n do
    local done = record[2 + 2 * j]
    local at = numbers[done] or num(done)
    if at < low_at then low, low_at = done, at end
  end
  local after_low = exclusive[low]
  if not after_low then
    after_low = '(' .. low
    exclusive[low] = after_low
  end
  local live = call('ZRANGEBYSCORE', index, after_low, '+inf', 'LIMIT', '0', shape.limit)
  local last = live[m + 2]
  local last_at = last and (numbers[last] or num(last))
  -- Whether window 1's totals are exactly empty once it retires its due slots: no live
  -- slot is newer than its cutoff (the stage invariant, as retire_swap.lua's); then they
  -- are deleted whole instead of subtracted.
  -- Window 1 only, and not the largest (whose zeroed members lose their data), on a board
  -- that hides nothing and has no review gate (whose steps see each member).
  local empties = n > 1 and not (hidden_members or review_rank)
  for j = 1, n do
    local done_mark = record[2 + 2 * j]
    local done, cutoff = numbers[done_mark] or num(done_mark), cutoffs[j]
    local due = live
    if last_at and last_at <= cutoff then
      due = call('ZRANGEBYSCORE', index, '(' .. done_mark,
        j == 1 and '+inf' or ARGV[C + j], 'LIMIT', '0', shape.limit)
    end
    for x = 1, #due do
      local slot = due[x]
      local at = numbers[slot] or num(slot)
      if at > cutoff then
        if j == 1 then empties = false end
        break
      end
      if at > done then
        local c = candidates[slot]
        if not c then return 'fallback', 'slots' end
        local g = geo[c]
        if g and bucket_count(g) > MAX_BUCKETS then return 'fallback', 'big' end
        local stage = (c - 1) * n + j
        local count = 1
        here[1] = KEYS[S + stage]
        if g then count = bucket_hashes(here[1], g, here) end
        local size = carried[c]
        for h = 1, count do
          local held = call('HLEN', here[h])
          local t = scratch.sized_count + 1
          scratch.sized_count, sized[t] = t, stage * 128 + h
          sizes[stage * 128 + h] = held
          size = size + held
        end
        carried[c] = size
        work = work + size
        if work > bound then return 'fallback', 'big' end
        planned = planned + 1
        plan[3 * planned - 2], plan[3 * planned - 1], plan[3 * planned] = j, c, slot
      end
    end
  end

  -- The plan fits: from here the call changes the board (first its record's 'quiet', when
  -- due: see lua/base.lua).
  if quiet_due then requiet(board) end
  -- The record's fields to set (watermarks, retired-through marks), in one HSET at the end.
  local fields, marks, marked = shape.fields, scratch.marks, 0
  local subtracted, zeroed, p = 0, 0, 1
  local data = KEYS[S + m * n + (shape.closed_c and 0 or n) + 1]
  for j = 1, n do
    local cutoff = cutoffs[j]
    local wm = record[1 + 2 * j]
    if (numbers[wm] or num(wm)) < cutoff then
      marks[marked + 1], marks[marked + 2], marked = fields[2 * j - 1], ARGV[C + j], marked + 2
    end
    -- Emptied (see `empties`): each member it counts reaches 0.
    local emptied = j == 1 and empties and p <= planned and plan[3 * p - 2] == 1
    if emptied then zeroed = call('ZREMRANGEBYRANK', KEYS[T + 1], '0', '-1') end
    while p <= planned and plan[3 * p - 2] == j do
      local c, slot = plan[3 * p - 1], plan[3 * p]
      local g, stage = geo[c], (c - 1) * n + j
      local count, handed = 1, 0
      here[1] = KEYS[S + stage]
      if g then count = bucket_hashes(here[1], g, here) end
      if j < n then
        handed = 1
        after[1] = KEYS[S + stage + 1]
        if g then handed = bucket_hashes(after[1], g, after) end
      end
      for h = 1, count do
        local key = here[h]
        -- An emptied window's stage is handed on unread (its size measured by the plan).
        local names, values, held = nil, nil, sizes[stage * 128 + h]
        if not emptied then
          names, values = fields_and_values(call('HGETALL', key))
          held = #names
          if held > 0 then
            zeroed = zeroed + bulk_add(KEYS[T + j], true, -1, names, values, nil, nil,
              j == n and data or nil)
          end
        end
        if held > 0 then
          local to = h <= handed and after[h] or nil
          local renamed = hand_on(key, to, names, values)
          if to then
            local t = scratch.sized_count + 1
            scratch.sized_count, sized[t] = t, (stage + 1) * 128 + h
            sizes[(stage + 1) * 128 + h] = renamed and held
          end
          sizes[stage * 128 + h] = 0
          subtracted = subtracted + held
        end
      end
      if j == n then
        call('ZREM', index, slot)
        if g then call('HDEL', geo_key, slot) end
      end
      p = p + 1
    end
    local done = record[2 + 2 * j]
    if (numbers[done] or num(done)) < cutoff then
      marks[marked + 1], marks[marked + 2], marked = fields[2 * j], ARGV[C + j], marked + 2
    end
  end
  if marked > 0 then call('HSET', board, unpack(marks, 1, marked)) end
  if review_rank then gate(board) end
  -- Every slot retired left its windows by the boundary window 1's cutoff + its length.
  if watch_spec then record_changes(board, 'retire', nil, shape.at_ms) end

  -- Whether the slot that just closed should be compacted (see the header): its stages'
  -- sizes first (most closed slots of a small board are too small, and that ends it),
  -- then the board's layout (false: not read yet).
  local compact = 0
  local minimum, layout = shape.minimum, false
  if shape.default_layout ~= 'compact' then
    layout = record[4 + 2 * n] or shape.default_layout
  end
  if minimum and (not layout or layout == 'compact') then
    local closed_c = shape.closed_c
    local first = closed_c and (closed_c - 1) * n or m * n
    local big = false
    for st = 1, n do
      local size = sizes[(first + st) * 128 + 1]
      local may_hold = st == 1 or (numbers[record[2 * st - 1]] or num(record[2 * st - 1]))
        >= shape.closed_at
      if size == false or (size == nil and may_hold) then
        size = call('HLEN', KEYS[S + first + st])
      end
      if size and size >= minimum then
        big = true
        break
      end
    end
    if big and not layout then layout = call('HGET', board, 'layout') or 'compact' end
    if big and layout == 'compact' and call('ZSCORE', index, shape.closed) then
      compact = call('HEXISTS', geo_key, shape.closed) == 1 and 0 or 1
    end
  end
  return 'done', planned, subtracted, zeroed, compact
end

local answers, spent, bound = {}, 0, nil
-- The lists every board's retirement fills anew (see `retire`), and an empty table
-- (`none`: the geometries of a board whose slots are all plain).
local scratch = { plan = {}, carried = {}, sizes = {}, sized = {}, sized_count = 0,
  marks = {}, here = {}, after = {}, none = {} }
-- The next board's keys follow KEYS[k], its arguments ('*' or its version) start at
-- ARGV[a]; the shape of the last board that had all its arguments is `shape`.
local k, a, shape = 0, 2, nil
for b = 1, tonumber(ARGV[1]) do
  local version = ARGV[a]
  if version == '*' then
    shape = shape_of(a)
    version = ARGV[a + 1]
    a = a + 1 + shape.nargs
  else
    a = a + 1
  end
  bound = bound or shape.bound
  local outcome, retired, subtracted, zeroed, compact = 'fallback', 'later', 0, 0, 0
  if spent <= bound then
    local ok
    ok, outcome, retired, subtracted, zeroed, compact =
      pcall(retire, k, version, shape, scratch)
    if not ok then
      -- A board refused (refuse: STALE) is answered so; any other error fails the call.
      if not (type(outcome) == 'table' and string.find(outcome.err or '', '^STALE')) then
        error(outcome)
      end
      outcome, retired = 'fallback', 'stale'
    end
    spent = spent + (subtracted or 0)
  end
  local x = 5 * b - 5
  answers[x + 1], answers[x + 2], answers[x + 3], answers[x + 4], answers[x + 5] =
    outcome, retired, subtracted or 0, zeroed or 0, compact or 0
  k = k + shape.nkeys
end
return answers
