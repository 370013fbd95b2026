-- compact_move.lua: one call of the retirer's compaction of a closed slot (compact.rs;
-- docs/compact-slots.md, "Compact slots"): moves the fields the caller names, whole buckets at
-- a time, from a stage's plain hash to its buckets, once relayout_chunk.lua (its
-- 'setup' call) gave the slot a geometry and the caller read the stage by HSCAN.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  slot index        slots_{b}
-- KEYS[3]  slot geometries   slotgeo_{b}
-- KEYS[4]  the stage's plain hash: slot_{b}_<ts> (stage 1), slot_{b}_<ts>_<k-1>; its
--          buckets <key>:<i> are named from it (same hash tag)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the slot's start
-- ARGV[3]  the compaction's token (the one its relayout_chunk.lua calls recorded in
--          rl_token)
-- ARGV[4]  lease, milliseconds: the record's rl_until is set to now + this
-- ARGV[5]  time budget of this call, microseconds: the call stops between two buckets
--          before the next one would likely overrun it, at the measured time per field
--          of the buckets done (at least one bucket is done)
-- ARGV[6]  the store's default layout (a record without `layout` has it)
-- ARGV[7]  the fields' member hashes (the prelude's member_hash), 4 bytes each,
--          big-endian, in the fields' order (as write.lua's hashes)
-- ARGV[8..] the fields (members) to move, ordered so that the fields of one bucket are
--          adjacent under any geometry at least as fine as the one the caller read:
--          by their hash with its bits reversed (bucket_of keeps the low bits)
--
-- Checks, in order: the board record (STALE), a recompute's lease (RECOMPUTING, as
-- relayout_chunk.lua refuses: a recompute's scan must not see a value move between
-- forms), that the token still holds the relayout lease (else {'lost', 0, 0}: another
-- run took the board, the caller stops), renews the lease, then that the slot is still
-- indexed, has a geometry not marked 'P' and the board's layout (its record's, else
-- ARGV[6]) is compact (else {'stop', 0, 0}: retired, or a relayout to plain won).
--
-- Then each named field still in the plain hash (absent: moved, removed or retired
-- meanwhile: skipped) is added to its bucket of the stage under the CURRENT geometry
-- (stage 1 of a slot no window froze may have split since the caller read it): per
-- bucket, an HSET when the bucket does not exist, else added to what it holds
-- (bulk_add, deleting what reaches 0); then one HDEL on the plain hash. Values move
-- within one stage, atomically, deleted from where they were: under the rule "sum both
-- forms" (docs/compact-slots.md, "Relayout") every reader stays exact, and the call sent again
-- after a lost reply finds the moved fields gone (Retry::Idempotent).
--
-- Returns {status, fields handled, values moved}: status 'ok' (the first `fields
-- handled` fields of ARGV[8..] were handled, all of them unless the budget ran out:
-- the caller sends the rest), 'lost' or 'stop' (see above; nothing handled).
-- Errors: "STALE ...", "RECOMPUTING ...".

local board, index, geo_key, plain = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ts, token = ARGV[2], ARGV[3]
local record = board_record(board, ARGV[1], 'rb_until', 'rl_until', 'rl_token', 'layout')
if lease_held(record[3]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed; the relayout waits')
end
if record[5] ~= token then return { 'lost', 0, 0 } end
local started = now_us()
redis.call('HSET', board, 'rl_until',
  string.format('%d', math.floor(started / 1000) + tonumber(ARGV[4])))
if (record[6] or ARGV[6]) ~= 'compact' or not redis.call('ZSCORE', index, ts) then
  return { 'stop', 0, 0 }
end
local geo = slot_geometry(geo_key, ts)
if not geo or geo.to_plain then return { 'stop', 0, 0 } end

local budget = tonumber(ARGV[5])
local hashes = ARGV[7]
local FIRST = 8
local count = #ARGV - FIRST + 1
if count <= 0 then return { 'ok', 0, 0 } end
local byte = string.byte
local values = redis.call('HMGET', plain, unpack(ARGV, FIRST))

-- bucket_of's rule, inlined with the geometry's constants: this loop runs once per
-- field, where a call or a power per field would cost as much as the HSET.
local size, split = 2 ^ geo.L, geo.p
local function bucket_at(y)
  local b1, b2, b3, b4 = byte(hashes, 4 * y - 3, 4 * y)
  local h = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  local b = h % size
  if b < split then b = h % (2 * size) end
  return b
end

local handled, moved, gone, ngone = 0, 0, {}, 0
local x = 1
local bucket = bucket_at(1)
while x <= count do
  -- The run of adjacent fields in this bucket: field/value pairs to set.
  local pairs_, npairs, y, next_bucket = {}, 0, x, nil
  while y <= count do
    if y > x then
      next_bucket = bucket_at(y)
      if next_bucket ~= bucket then break end
    end
    local value = values[y]
    if value then
      local field = ARGV[FIRST + y - 1]
      ngone = ngone + 1
      gone[ngone] = field
      if value ~= '0' then
        pairs_[npairs + 1], pairs_[npairs + 2] = field, value
        npairs = npairs + 2
      end
    end
    y = y + 1
  end
  if npairs > 0 then
    local key = bucket_key(plain, bucket)
    if redis.call('EXISTS', key) == 1 then
      local fields, amounts = {}, {}
      for z = 1, npairs / 2 do
        fields[z], amounts[z] = pairs_[2 * z - 1], tonumber(pairs_[2 * z])
      end
      bulk_add(key, false, 1, fields, amounts)
    else
      redis.call('HSET', key, unpack(pairs_))
    end
    moved = moved + npairs / 2
  end
  handled, x, bucket = y - 1, y, next_bucket
  if x <= count then
    -- The next bucket's fields (adjacent, as the caller orders them) at the pace so far.
    local size, z = 1, x + 1
    while z <= count and bucket_at(z) == bucket do
      size, z = size + 1, z + 1
    end
    local elapsed = now_us() - started
    if elapsed + size * elapsed / handled > budget then break end
  end
end
if ngone > 0 then redis.call('HDEL', plain, unpack(gone)) end
return { 'ok', handled, moved }
