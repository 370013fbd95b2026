-- writes.lua: the parts of a write: the freeze, a stage's value in either form, the
-- windows' totals, the recompute hooks and the slot forms.

-- The freeze of a write (write.lua, write_plain.lua): each window j whose cutoff at the
-- caller's now (ARGV[cutoffs + j]) passed its watermark (the board record's field
-- fields[at + j], wm:<W>, read as record[at + j]) gets the cutoff as its watermark, so
-- an event for a slot that left the window skips it even before retirement runs.
-- Returns the stage of each of the call's m slots (slot i starting at ARGV[starts + i]):
-- the number of windows that froze it (a prefix, since watermarks never increase with
-- the window; n: too late).
local function write_stages(board, fields, record, at, cutoffs, starts, n, m)
  local watermark = {}
  for j = 1, n do
    local wm, cutoff = record[at + j] + 0, ARGV[cutoffs + j] + 0
    if cutoff > wm then
      redis.call('HSET', board, fields[at + j], ARGV[cutoffs + j])
      wm = cutoff
    end
    watermark[j] = wm
  end
  local stage = {}
  for i = 1, m do
    local s, k = ARGV[starts + i] + 0, 0
    for j = 1, n do
      if watermark[j] >= s then k = j end
    end
    stage[i] = k
  end
  return stage
end

-- `member`'s value in the stage `stage_key`: its plain hash plus, on a compact slot
-- (`bucket`, the member's bucket, else nil), that bucket; both forms may hold a value
-- while an active relayout converts the slot (docs/compact-slots.md, "Relayout").
local function stage_value(stage_key, bucket, member)
  local value = tonumber(redis.call('HGET', stage_key, member)) or 0
  if bucket then
    value = value + (tonumber(redis.call('HGET', bucket_key(stage_key, bucket), member)) or 0)
  end
  return value
end

-- The parts of a write (write.lua) that vary independently of one another: how a
-- window's totals are kept (dense tallies or not), whether a recompute is told, and the
-- form of each slot written (plain, compact, or being relaid out). Each factory runs
-- once per call and returns what the write's loop calls per entry, so the loop never
-- tests which variant it is in.

-- Dense tallies: a function adding `delta` (an integer string) to `member`'s total in
-- window j, KEYS[totals + j], and, when `dense` is given (a dense board: its tally and
-- distinct totals of window j are KEYS[dense + 2j - 1] and KEYS[dense + 2j]), to the
-- window's tally; a total of the largest window (j = n) that reaches 0 takes the
-- member's data in `data` (data_{b}) with it.
local function window_totals(totals, dense, n, data)
  if dense then
    return function(j, member, delta)
      add_total(KEYS[totals + j], member, delta, KEYS[dense + 2 * j - 1], KEYS[dense + 2 * j],
        j == n and data or nil)
    end
  end
  return function(j, member, delta)
    add_total(KEYS[totals + j], member, delta, nil, nil, j == n and data or nil)
  end
end

-- Recompute hooks: while a recompute of window `rebuilt` (its position; nil: none holds
-- its lease) runs, a function telling it about an entry of the slot starting at `start`
-- applied at stage k (its stage hash `stage_key`, on a compact slot its buckets' prefix),
-- when the entry counts in that window (k < rebuilt). In its scan phase (`scanning`) it
-- depends on how far the scan of that stage is (rebuild_scan_{b}, the scan's progress):
-- not started, nothing (the scan will read the value as it is then); scanned ('done'),
-- the delta goes to the build too (the scan read the value before it); part-scanned,
-- the member joins the log (whether the scan read it is unknown: its total will be
-- computed afresh by the fold). In its fold phase the delta goes to the build (`build`,
-- with `build_tally` and `build_dense` on a dense board) too, unless the member is still
-- in the log; if the member is the one being folded (`fold_member`) and the slot one its
-- fold has summed (up to `fold_slot`), the delta goes to the record's rb_fold_sum. nil
-- when no recompute runs, so a write pays nothing for it then.
local function recompute_hook(board, build, log, rebuilt, scanning, fold_member, fold_slot,
                              build_tally, build_dense)
  if not rebuilt then return nil end
  local progress = 'rebuild_scan_' .. string.sub(build, 9)
  return function(start, k, member, delta, stage_key)
    if k < rebuilt then
      if scanning then
        local reached = redis.call('HGET', progress, stage_key)
        if reached == 'done' then
          add_to(build, member, delta, build_tally, build_dense)
        elseif reached then
          redis.call('SADD', log, member)
        end
      elseif redis.call('SISMEMBER', log, member) == 0 then
        add_to(build, member, delta, build_tally, build_dense)
      elseif member == fold_member and tonumber(start) <= tonumber(fold_slot) then
        -- The member being folded, in a slot its fold has summed already.
        redis.call('HINCRBY', board, 'rb_fold_sum', delta)
      end
    end
  end
end

-- A slot a write creates during a recompute's scan (`build` the recompute's build,
-- `stage_keys` the slot's stage hashes the window counts): the scan listed the slots
-- before, so it never reads this one; its stages are marked scanned, and every write to
-- it goes to the build as it lands (a scan that had listed it finds it scanned).
local function recompute_new_slot(build, stage_keys)
  local progress = 'rebuild_scan_' .. string.sub(build, 9)
  for _, key in ipairs(stage_keys) do
    redis.call('HSET', progress, key, 'done')
  end
end

-- Compact slot splits made by one write call at most; the next call goes on.
local MAX_SPLITS = 32

-- Slot forms: the m distinct slots a write call touches, each plain, compact (a
-- geometry) or compact being relaid out as plain (a geometry marked 'P': written in the
-- plain stage hashes, never split, both forms read), behind functions that hide which.
-- Stage st of slot i is KEYS[stages + (i - 1) * n + st]; slot i starts at
-- ARGV[starts + i] and `stage[i]` windows froze it (n: too late, never touched). A slot
-- this call creates (not yet in the slot index `index`) that starts before `current`
-- (the open slot's start) gets a geometry when `layout` is 'compact', with as many
-- buckets as the newest older slot's count fills at `fill` fields a bucket (so a board
-- whose slots are alike seldom splits), else one; from `current` on it is plain. Returns
-- {geo = slot -> geometry or false, key, value, counted, save}:
--   key(i, st, member, h): the key holding `member`'s value in stage st of slot i (`h`:
--     the member's hash when the caller sent it);
--   value(i, st, member, h): that value, both forms summed (stage_value);
--   counted(i, value, delta): notes that an HINCRBY of `delta` answered `value` (a new
--     field when equal);
--   save(): stores the geometry of every compact slot the call changed (a new one
--     deletes the record's plain_slots, see create_board.lua), first splitting
--     stage 1 of those no window froze while they are over their fill (linear hashing:
--     bucket p splits into p and p + 2^L, at most MAX_SPLITS a call).
local function write_slots(board, geo_key, index, stages, n, m, starts, stage, layout, fill, current)
  local geo, fresh, grew = {}, {}, {}
  -- A fresh slot's geometry: the bucket count the newest older slot's count fills.
  local function sized_like_before(ts)
    local before = redis.call('ZREVRANGEBYSCORE', index, '(' .. ts, '-inf', 'LIMIT', 0, 1)[1]
    local prev = before and slot_geometry(geo_key, before)
    return sized_geometry(prev and prev.count or 0, fill, 0)
  end
  local stored = m > 0 and redis.call('HMGET', geo_key, unpack(ARGV, starts + 1, starts + m)) or {}
  for i = 1, m do
    geo[i], grew[i] = false, 0
    if stage[i] < n then
      local ts = ARGV[starts + i]
      local g = parse_geometry(stored[i])
      if not g and layout == 'compact' and tonumber(ts) < current
        and not redis.call('ZSCORE', index, ts) then
        g = sized_like_before(ts)
        fresh[i] = true
      end
      geo[i] = g or false
    end
  end

  local slots = { geo = geo }
  function slots.key(i, st, member, h)
    local key = KEYS[stages + (i - 1) * n + st]
    if not geo[i] or geo[i].to_plain then return key end
    return bucket_key(key, bucket_of(geo[i], h or member_hash(member)))
  end
  function slots.value(i, st, member, h)
    local bucket = geo[i] and bucket_of(geo[i], h or member_hash(member))
    return stage_value(KEYS[stages + (i - 1) * n + st], bucket, member)
  end
  function slots.counted(i, value, delta)
    if geo[i] and value == tonumber(delta) then grew[i] = grew[i] + 1 end
  end
  -- Splits bucket p of stage 1 of slot i.
  local function split(i)
    local g, stage_key = geo[i], KEYS[stages + (i - 1) * n + 1]
    local size = 2 ^ g.L
    local from, to = bucket_key(stage_key, g.p), bucket_key(stage_key, g.p + size)
    local all = redis.call('HGETALL', from)
    local moved, gone = {}, {}
    for x = 1, #all, 2 do
      if member_hash(all[x]) % (2 * size) ~= g.p then
        moved[#moved + 1], moved[#moved + 2] = all[x], all[x + 1]
        gone[#gone + 1] = all[x]
      end
    end
    if #gone > 0 then
      redis.call('HSET', to, unpack(moved))
      redis.call('HDEL', from, unpack(gone))
    end
    g.p = g.p + 1
    if g.p == size then g.L, g.p = g.L + 1, 0 end
  end
  function slots.save()
    for i = 1, m do
      local g = geo[i]
      if g and (fresh[i] or grew[i] > 0) then
        g.count = g.count + grew[i]
        local splits = 0
        while stage[i] == 0 and not g.to_plain and splits < MAX_SPLITS
          and g.count > fill * bucket_count(g) do
          split(i)
          splits = splits + 1
        end
        redis.call('HSET', geo_key, ARGV[starts + i], geometry_text(g))
        if fresh[i] then redis.call('HDEL', board, 'plain_slots') end
      end
    end
  end
  return slots
end
