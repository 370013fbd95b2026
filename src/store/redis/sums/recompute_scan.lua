-- recompute_scan.lua: add one stage hash's values to a recompute's build, in steps.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  a stage key of a live slot counted by the window being rebuilt: the stage
--          hash of a plain slot; of a compact slot, the prefix of its buckets
--          `<stage key>:<i>` (same hash tag, so same node)
-- KEYS[4]  scan progress     rebuild_scan_{b}: field = stage key, value = the cursor its
--          scan reached ('done' when scanned)
-- KEYS[5]  slot geometries   slotgeo_{b}
-- KEYS[6], KEYS[7]  dense boards only: the build's tally and distinct totals
--          (rebuild_tally_{b}, rebuild_dense_{b}; see retally in the prelude)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  HSCAN cursor ('0' to start): where the caller believes the scan is
-- ARGV[5]  most fields to add in this call
-- ARGV[6]  time budget of this call, microseconds
-- ARGV[7]  the slot's start (names its geometry)
--
-- Adds the values of HSCAN steps of about 50 fields to the build (one ZMSCORE, one ZADD
-- and one ZREM per step; values are integers below 2^53, exact in Lua's doubles) until
-- the scan ends, ARGV[5] fields are added, or the next step would likely overrun the
-- budget, and records the cursor reached in the same call. The hash is read, not changed.
-- Never twice:
--   - a call whose cursor is not the one recorded (it was sent again after its reply was
--     lost, and the first sending ran) adds nothing and answers the recorded cursor, so
--     the caller goes on from there: each call's effect is a function of the state;
--   - a field HSCAN returns twice within the call is added once;
--   - across calls HSCAN returns a field twice only when the hash's table shrank between
--     them, which takes deletions of most of its fields: retirement, the one source of
--     mass deletions, waits while the recompute holds its lease (see recompute_begin.lua).
-- Compact slot (it has a geometry): the stage is walked bucket by bucket, each bucket
-- whole (HGETALL: a bucket is small), and the cursor is a position c in 0..2^32 of the
-- bit-reversed member hash. A bucket of level l (its index is h mod 2^l) holds exactly
-- the members whose reversed hash lies in one interval of length 2^(32-l), starting
-- where the reversed index starts; a split (write.lua, stage 1 only) cuts a bucket's
-- interval in two halves and moves no member to another interval. So "every interval
-- below c is scanned" survives any number of splits between calls: each call reads the
-- bucket whose interval starts at c (the bucket of the hash reversed(c)) and moves c to
-- its end; no field is added twice or missed (the reversed cursor of Redis's SCAN, for
-- a table that only grows), kept as 'r<c>'. 'done' at c = 2^32. Before the buckets, the
-- plain stage hash an active relayout may leave beside them is scanned as on a plain
-- slot (cursor 'p<HSCAN cursor>'; docs/compact-slots.md, "Relayout").
-- Returns {cursor, fields added}; cursor is 'done' when the hash is scanned.
-- Errors: "STALE ..."; "LOST ..." when the recompute's lease expired or was taken over.

local board, build, stage, progress = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tally, dense = KEYS[6], KEYS[7]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'rb_phase')
local started = now_us()
if record[3] ~= ARGV[2] or record[5] ~= 'scan' or started / 1000 >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', math.floor(started / 1000) + tonumber(ARGV[3]))

local reached = redis.call('HGET', progress, stage) or '0'
if reached ~= ARGV[4] then
  return { reached, 0 }
end

local max_fields, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local cursor, added, elapsed, slowest = ARGV[4], 0, 0, 0
local seen = {}

-- Adds the fields found[from..to] (name, value, ...) not seen in this call.
local function add_some(found, from, to)
  local names, values = fields_and_values(found, seen, from, to)
  if #names > 0 then
    local current = redis.call('ZMSCORE', build, unpack(names))
    local set, zero = {}, {}
    for x = 1, #names do
      local value = (tonumber(current[x]) or 0) + values[x]
      if tally then retally(tally, dense, current[x], value) end
      if value == 0 then
        zero[#zero + 1] = names[x]
      else
        set[#set + 1] = string.format('%d', value)
        set[#set + 1] = names[x]
      end
    end
    if #set > 0 then redis.call('ZADD', build, unpack(set)) end
    if #zero > 0 then redis.call('ZREM', build, unpack(zero)) end
    added = added + #names
  end
end

-- Adds the fields of `found` (name, value, name, value, ...) not seen in this call, 500
-- at a time (unpack's limit is some thousands of values; a bucket may hold more while
-- its splits catch up).
local function add(found)
  for from = 1, #found, 1000 do
    add_some(found, from, math.min(from + 999, #found))
  end
end

-- `c` (0..2^32-1) with its 32 bits in reverse order.
local function reversed(c)
  local r = 0
  for _ = 1, 32 do
    r = r * 2 + c % 2
    c = math.floor(c / 2)
  end
  return r
end

-- HSCAN steps of about 50 fields over the hash `key` from `hcursor`, each added, until
-- the chain ends or this call's bounds are reached; answers the cursor ('0': the end).
local function scan_hash(key, hcursor)
  repeat
    local before = elapsed
    local scan = redis.call('HSCAN', key, hcursor, 'COUNT', 50)
    hcursor = scan[1]
    add(scan[2])
    elapsed = now_us() - started
    slowest = math.max(slowest, elapsed - before)
  until hcursor == '0' or added >= max_fields or elapsed + slowest > budget
  return hcursor
end

local geo = slot_geometry(KEYS[5], ARGV[7])
if geo then
  -- The plain part an active relayout may have left (cursor 'p<HSCAN cursor>', from
  -- '0'), then the buckets (cursor 'r<c>'). No conversion runs while a recompute holds
  -- its lease (relayout_chunk.lua refuses), so the plain part is written only by writes
  -- of a slot marked 'P', whose members join the log anyway: HSCAN returns every field
  -- present throughout the chain, and none twice, as on a plain slot.
  if not string.match(cursor, '^r') then
    local pc = scan_hash(stage, string.match(cursor, '^p(%d+)$') or '0')
    if pc ~= '0' then
      cursor = 'p' .. pc
      redis.call('HSET', progress, stage, cursor)
      return { cursor, added }
    end
    cursor = 'r0'
    -- A member may have a value in both forms: each is added.
    seen = {}
  end
  local c, whole = tonumber(string.sub(cursor, 2)), 2 ^ 32
  repeat
    local before = elapsed
    local b = bucket_of(geo, reversed(c))
    local level = geo.L
    if b < geo.p or b >= 2 ^ geo.L then level = level + 1 end
    local length = 2 ^ (32 - level)
    add(redis.call('HGETALL', bucket_key(stage, b)))
    c = c - c % length + length
    elapsed = now_us() - started
    slowest = math.max(slowest, elapsed - before)
  until c >= whole or added >= max_fields or elapsed + slowest > budget
  cursor = (c >= whole) and 'done' or string.format('r%d', c)
  redis.call('HSET', progress, stage, cursor)
  return { cursor, added }
end

cursor = scan_hash(stage, cursor)
if cursor == '0' then
  cursor = 'done'
end
redis.call('HSET', progress, stage, cursor)
return { cursor, added }
