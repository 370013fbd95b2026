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
-- ARGV[5]  'max' or 'latest'
-- ARGV[5+i]  the fields to move (the caller read them from the plain hash with HSCAN
--          before the first move: a scan of a hash being emptied is slow); none on the
--          first call, which only gives the slot its geometry
--
-- Leaves the slot as it is ({'skip', 0}) when it is no longer live, the largest window
-- froze it (it is leaving the board: its retirement deletes each form as its scan leaves
-- it, so nothing may move behind that scan), a recompute holds the board's lease, or,
-- without a geometry yet, its hash holds fewer than 2 × fill fields (one listpack
-- already). Else it gives the slot a geometry sized for its fields the first time
-- (sized_geometry; then writes of the slot go to its buckets, see write_max.lua), and
-- moves the named fields still in the plain hash (one HMGET) into their buckets, each
-- merged with what its bucket holds (better_held: a late write may have put a value
-- there since), one HMGET and one HSET a bucket, then deletes them from the plain hash
-- with one HDEL. Atomic: a reader, which reads the plain hash first and then the
-- buckets (the prelude's slot_scan), sees each value in one form or both, never in
-- neither. A step sent again finds its fields moved: it moves nothing.
-- Returns {'ok', fields moved, fields left in the plain hash}.
-- Error "STALE ..." as write.lua.

local board, index, geo_key, plain = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ts = ARGV[2]
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[3], 'rb_until')
if lease_held(record[4]) or tonumber(record[3]) >= tonumber(ts)
  or not redis.call('ZSCORE', index, ts) then
  return { 'skip', 0 }
end
local latest = ARGV[5] == 'latest'
local geo = slot_geometry(geo_key, ts)
if not geo then
  local count = redis.call('HLEN', plain)
  if count < 2 * tonumber(ARGV[4]) then return { 'skip', 0 } end
  geo = sized_geometry(count, tonumber(ARGV[4]), count)
  redis.call('HSET', geo_key, ts, geometry_text(geo))
  redis.call('HDEL', board, 'plain_slots')
end

local named = {}
for x = 6, #ARGV do named[#named + 1] = ARGV[x] end
local values = #named > 0 and redis.call('HMGET', plain, unpack(named)) or {}
local by_bucket, buckets, moved = {}, {}, {}
for x, field in ipairs(named) do
  if values[x] then
    moved[#moved + 1] = field
    local key = held_key(plain, geo, field)
    if not by_bucket[key] then
      by_bucket[key] = {}
      buckets[#buckets + 1] = key
    end
    local entries = by_bucket[key]
    entries[#entries + 1] = field
    entries[#entries + 1] = values[x]
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
return { 'ok', #moved, redis.call('HLEN', plain) }
