-- relayout_chunk.lua: one bounded step of converting a live slot to a layout (an active
-- relayout, `relayout --now`; docs/compact-slots.md, "Relayout").
--
-- KEYS[1]      board record      board_{b}
-- KEYS[2]      slot index        slots_{b}
-- KEYS[3]      slot geometries   slotgeo_{b}
-- KEYS[3+k]    stage k (1..n) of the slot: slot_{b}_<ts> (k = 1), slot_{b}_<ts>_<k-1>;
--              a compact slot's buckets <key>:<i> are named from them (same hash tag)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the layout to convert the slot to: 'compact' or 'plain'
-- ARGV[3]  the slot's start
-- ARGV[4]  cursor ('0' to start): 'c<k>:<HSCAN cursor>' converting stage k to compact,
--          'p<k>:<i>:<HSCAN cursor>' converting bucket i of stage k to plain; a cursor
--          of another direction or geometry starts the work over, which is always safe
-- ARGV[5]  time budget of this call, microseconds (at least one step is done)
-- ARGV[6]  fill: fields per bucket a new geometry is sized for (as write.lua's)
-- ARGV[7]  lease, milliseconds: the record's rl_until is set to now + this, so that a
--          recompute does not start meanwhile (recompute_begin.lua)
-- ARGV[8]  the caller's token (random, one per relayout run): recorded in rl_token
-- ARGV[9]  optional, the retirer's compaction of a closed slot (docs/compact-slots.md, "Compact
--          slots"): the minimum fields. With ARGV[2] 'compact' and cursor '0', a slot
--          that has a geometry already, is not in the index, or whose largest stage has
--          fewer fields than this, is left as it is: the call answers done having
--          changed nothing, without looking at or taking the lease
-- ARGV[10] optional, with ARGV[9]: the store's default layout. The call then converts
--          only while the board's layout (its record's, else this) is compact, checked
--          on every call, so that a concurrent `relayout --layout plain` wins: the slot
--          stays as it is (mixed, if converting had begun; exact either way)
-- ARGV[11] optional, with ARGV[9] and ARGV[2] 'compact': 'setup' makes the call stop
--          once the slot has its geometry (created, or found), moving nothing, and
--          answer the cursor 'c1:0'; the retirer's compaction then moves whole buckets
--          itself (compact_move.lua) and ends with ordinary calls from that cursor
-- With ARGV[3] = '' the call only ends the caller's lease (when it still holds it).
--
-- One relayout runs on a board at a time: a call refuses while another token's lease
-- holds, and a call whose token is not the recorded one (the lease of another run
-- expired, or this run stalled past its own) ignores its cursor and starts the slot
-- over, so a cursor is only ever used by the run that made it, on the geometry it saw.
--
-- The rule "sum both forms": a slot with a geometry holds each stage as its buckets
-- plus its plain hash; one without is plain only. Every reader sums both, and this call
-- only moves values from one form of a stage to the other form of the same stage, in
-- one atomic call, deleting what it moves: readers stay exact, and a call sent again
-- (or a second converter) finds moved values gone and moves nothing twice.
-- To compact: the first call gives the slot a geometry (sized from its largest stage,
-- count / fill buckets, as write.lua sizes a new slot); writes then go to buckets. Then
-- stage by stage, increasing k: HSCAN steps of about 50 fields of the plain hash, each
-- field added to its bucket of the same stage (bulk_add) and deleted from the hash.
-- To plain: the first call marks the geometry 'P'; writes then go to the plain hashes
-- and no bucket splits. Then stage by stage, increasing k, bucket by bucket: HSCAN steps
-- (a listpack bucket answers whole) added to the plain hash and deleted from the
-- bucket. The call that finds no bucket left in any stage deletes the geometry: the
-- slot is plain.
-- Increasing k is safe with retirement going on: retirement hands stage j to stage j+1
-- form by form, so once stage k's old form is empty nothing refills it (writes go to
-- the new form, stage k-1's old form was emptied before).
-- A slot being converted to plain, asked to compact, is first finished to plain (then
-- converted back): the direction under way is always finished first. A slot converted
-- to compact while asked to plain is simply converted to plain (its plain part stays).
-- Returns {cursor, values moved, changed}; cursor is 'done' when the slot has the layout
-- (or it retired meanwhile); changed is 1 when the call changed the slot (moved a value,
-- or created, marked or deleted its geometry), else 0.
-- Errors: "STALE ..."; "RECOMPUTING ..." while a recompute holds its lease (its scan
-- must not see a value move between forms).

local board, index, geo_key = KEYS[1], KEYS[2], KEYS[3]
local n = #KEYS - 3
local target, ts, cursor = ARGV[2], ARGV[3], ARGV[4]
local budget, fill = tonumber(ARGV[5]), tonumber(ARGV[6])
local token = ARGV[8]
local record = board_record(board, ARGV[1], 'rb_until', 'rl_until', 'rl_token', 'layout')
if ts == '' then
  if record[5] == token then redis.call('HDEL', board, 'rl_until', 'rl_token') end
  return { 'done', 0, 0 }
end
local minimum = tonumber(ARGV[9] or '')
if minimum then
  -- The retirer's compaction: only a compact board's plain slot big enough to gain.
  if (record[6] or ARGV[10]) ~= 'compact' then return { 'done', 0, 0 } end
  if cursor == '0' then
    if not redis.call('ZSCORE', index, ts) or redis.call('HEXISTS', geo_key, ts) == 1 then
      return { 'done', 0, 0 }
    end
    local size = 0
    for k = 4, #KEYS do size = math.max(size, redis.call('HLEN', KEYS[k])) end
    if size < minimum then return { 'done', 0, 0 } end
  end
end
if lease_held(record[3]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed; the relayout waits')
end
if record[5] ~= token then
  if lease_held(record[4]) then
    return redis.error_reply('RELAYOUT another relayout of this board is running')
  end
  cursor = '0'
end
local started = now_us()
redis.call('HSET', board, 'rl_token', token,
  'rl_until', string.format('%d', math.floor(started / 1000) + tonumber(ARGV[7])))
if not redis.call('ZSCORE', index, ts) then
  -- Retired (its geometry went with its index entry), or never written.
  return { 'done', 0, 0 }
end

local function stage(k) return KEYS[3 + k] end
local geo = slot_geometry(geo_key, ts)
local moved, elapsed, slowest, changed = 0, 0, 0, 0
-- Stop before a step that would likely overrun the budget.
local function out_of_time(before)
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
  return elapsed + slowest > budget
end

-- Moves the fields of a flat HSCAN reply from hash `from` to the other form: to the
-- plain hash `to`, or (to nil) to their buckets of stage `k`.
local function move(flat, from, to, k)
  local fields, values = fields_and_values(flat)
  if #fields == 0 then return end
  if to then
    bulk_add(to, false, 1, fields, values)
  else
    local by_bucket = {}
    for x = 1, #fields do
      local b = bucket_of(geo, member_hash(fields[x]))
      local group = by_bucket[b]
      if not group then
        group = { {}, {} }
        by_bucket[b] = group
      end
      group[1][#group[1] + 1] = fields[x]
      group[2][#group[2] + 1] = values[x]
    end
    for b, group in pairs(by_bucket) do
      bulk_add(bucket_key(stage(k), b), false, 1, group[1], group[2])
    end
  end
  redis.call('HDEL', from, unpack(fields))
  moved, changed = moved + #fields, 1
end

local to_plain = target == 'plain' or (geo and geo.to_plain)
if to_plain then
  if not geo then return { 'done', 0, 0 } end
  if not geo.to_plain then
    geo.to_plain, changed = true, 1
    redis.call('HSET', geo_key, ts, geometry_text(geo))
    cursor = '0'
  end
  local count = bucket_count(geo)
  local k, i, sub = string.match(cursor, '^p(%d+):(%d+):(%d+)$')
  k, i, sub = tonumber(k) or 1, tonumber(i) or 0, sub or '0'
  while k <= n do
    local before = elapsed
    if i >= count then
      k, i, sub = k + 1, 0, '0'
    else
      local from = bucket_key(stage(k), i)
      local scan = redis.call('HSCAN', from, sub, 'COUNT', 50)
      move(scan[2], from, stage(k), k)
      sub = scan[1]
      -- A bucket of a 'P' slot only shrinks (nothing writes or hands on to it here).
      if sub == '0' and redis.call('EXISTS', from) == 0 then i = i + 1 end
    end
    if out_of_time(before) then break end
  end
  if k <= n then
    return { string.format('p%d:%d:', k, i) .. sub, moved, changed }
  end
  redis.call('HDEL', geo_key, ts)
  if target == 'plain' then return { 'done', moved, 1 } end
  -- Asked to compact: the slot is plain now; the next call converts it.
  return { '0', moved, 1 }
end

if not geo then
  -- Sized from the largest stage (an old slot's stage 1 may be retired already).
  local size = 0
  for k = 1, n do size = math.max(size, redis.call('HLEN', stage(k))) end
  geo = sized_geometry(size, fill, size)
  redis.call('HSET', geo_key, ts, geometry_text(geo))
  redis.call('HDEL', board, 'plain_slots')
  changed = 1
end
if minimum and ARGV[11] == 'setup' then return { 'c1:0', 0, changed } end
local k, sub = string.match(cursor, '^c(%d+):(%d+)$')
k, sub = tonumber(k) or 1, sub or '0'
while k <= n do
  local before = elapsed
  local scan = redis.call('HSCAN', stage(k), sub, 'COUNT', 50)
  move(scan[2], stage(k), nil, k)
  sub = scan[1]
  -- The plain hash of a compact slot's stage only shrinks once the converter reached it.
  if sub == '0' and redis.call('EXISTS', stage(k)) == 0 then k = k + 1 end
  if out_of_time(before) then break end
end
if k <= n then
  return { string.format('c%d:', k) .. sub, moved, changed }
end
return { 'done', moved, changed }
