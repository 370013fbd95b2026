-- compact_max.lua: one step of the retirer's conversion of a max, min or latest board's
-- closed slot into buckets (docs/design.md, "Compact slots of max, min and latest
-- boards").
--
-- KEYS[1]  board record        board_{b}
-- KEYS[2]  slot index          slots_{b}
-- KEYS[3]  slot geometries     slotgeo_{b}
-- KEYS[4]  the slot's hash     slot_{b}_<ts>
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the slot's start
-- ARGV[3]  the largest window, seconds (its watermark wm:<W>)
-- ARGV[4]  fill: fields a bucket is sized for
-- ARGV[5]  fields a step moves (HSCAN COUNT)
-- ARGV[6]  the HSCAN cursor to go on from ('0': the start)
-- ARGV[7]  'max' or 'latest'
--
-- Leaves the slot as it is ({'skip', 0}) when it is no longer live, the largest window
-- froze it (it is leaving the board: its retirement deletes each form as its scan leaves
-- it, so nothing may move behind that scan), a recompute holds the board's lease, or,
-- without a geometry yet, its hash holds fewer than 2 × fill fields (one listpack
-- already). Else it gives the slot a geometry sized for its fields the first time
-- (sized_geometry; then writes of the slot go to its buckets, see write_max.lua), and
-- moves the step's fields of the plain hash into their buckets, each merged with what
-- its bucket holds (better_held: a late write may have put a value there since), one
-- HMGET and one HSET a bucket, then deletes them from the plain hash with one HDEL.
-- Atomic: a reader, which reads the plain hash first and then the buckets (the
-- prelude's slot_scan), sees each value in one form or both, never in neither. A step
-- sent again finds its fields moved: it moves what is left.
-- Returns {'more', fields moved, next cursor} or {'done', fields moved}.
-- Error "STALE ..." as write.lua.

local board, index, geo_key, plain = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ts = ARGV[2]
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[3], 'rb_until')
if lease_held(record[4]) or tonumber(record[3]) >= tonumber(ts)
  or not redis.call('ZSCORE', index, ts) then
  return { 'skip', 0 }
end
local latest = ARGV[7] == 'latest'
local geo = slot_geometry(geo_key, ts)
if not geo then
  local count = redis.call('HLEN', plain)
  if count < 2 * tonumber(ARGV[4]) then return { 'skip', 0 } end
  geo = sized_geometry(count, tonumber(ARGV[4]), count)
  redis.call('HSET', geo_key, ts, geometry_text(geo))
end

local step = redis.call('HSCAN', plain, ARGV[6], 'COUNT', ARGV[5])
local flat = step[2]
local by_bucket, buckets, moved, seen = {}, {}, {}, {}
for x = 1, #flat, 2 do
  local field = flat[x]
  if not seen[field] then
    seen[field] = true
    moved[#moved + 1] = field
    local key = held_key(plain, geo, field)
    if not by_bucket[key] then
      by_bucket[key] = {}
      buckets[#buckets + 1] = key
    end
    local entries = by_bucket[key]
    entries[#entries + 1] = field
    entries[#entries + 1] = flat[x + 1]
  end
end
for _, key in ipairs(buckets) do
  local entries = by_bucket[key]
  local names = {}
  for x = 1, #entries, 2 do names[#names + 1] = entries[x] end
  local held = redis.call('HMGET', key, unpack(names))
  for x = 1, #entries, 2 do
    entries[x + 1] = better_held(held[(x + 1) / 2], entries[x + 1], latest)
  end
  redis.call('HSET', key, unpack(entries))
end
if #moved > 0 then redis.call('HDEL', plain, unpack(moved)) end
if step[1] ~= '0' then return { 'more', #moved, step[1] } end
-- The scan ended: every field present throughout was moved (none comes into the plain
-- hash once the slot has a geometry); go round again if any is left.
if redis.call('EXISTS', plain) == 1 then return { 'more', #moved, '0' } end
return { 'done', #moved }
