-- compact_slots.lua: a compact slot's geometry, its members' hashes and its buckets' keys.

-- Compact slots (docs/compact-slots.md, "Compact slots"). A slot with a geometry, field <ts> of
-- slotgeo_{b} = "<L> <p> <count>", keeps each stage S as small hashes, the buckets
-- S:<i> for i < 2^L + p (linear hashing); a slot without one keeps each stage as one
-- hash. A member's bucket depends on its hash and the slot's geometry only, so bucket i
-- of stage k maps to bucket i of stage k+1. Scripts name bucket keys from a stage key
-- passed in KEYS: same hash tag, so same node on a Cluster.

-- A geometry field's value as {L, p, count, to_plain}; nil for none (false, a plain
-- slot). A 4th token 'P' ("L p count P") marks a slot being converted to plain by an
-- active relayout (relayout_chunk.lua): its writes go to the plain stage hashes, and
-- each stage's content is its plain hash plus its buckets until no bucket is left.
local function parse_geometry(text)
  if not text then return nil end
  local l, p, count, flag = string.match(text, '^(%d+) (%d+) (%d+) ?(P?)$')
  return { L = tonumber(l), p = tonumber(p), count = tonumber(count), to_plain = flag == 'P' }
end

-- A geometry as its field's value (the inverse of parse_geometry).
local function geometry_text(g)
  return string.format('%d %d %d', g.L, g.p, g.count) .. (g.to_plain and ' P' or '')
end

-- The geometry of slot `ts` (a string) as {L, p, count}, or nil for a plain slot.
local function slot_geometry(geo_key, ts)
  return parse_geometry(redis.call('HGET', geo_key, ts))
end

-- A member's hash: the first 32 bits of its SHA-1, as an integer.
local function member_hash(member)
  return tonumber(string.sub(redis.sha1hex(member), 1, 8), 16)
end

-- The bucket of hash `h` in geometry `geo`.
local function bucket_of(geo, h)
  local size = 2 ^ geo.L
  local b = h % size
  if b < geo.p then b = h % (2 * size) end
  return b
end

-- How many buckets a geometry has.
local function bucket_count(geo)
  return 2 ^ geo.L + geo.p
end

-- A new geometry with as many buckets as `fields` fields fill at `fill` per bucket (at
-- least one), counting `count` fields.
local function sized_geometry(fields, fill, count)
  local g = { L = 0, p = 0, count = count, to_plain = false }
  local want = math.floor(fields / fill)
  if want >= 2 then
    while 2 ^ (g.L + 1) <= want do g.L = g.L + 1 end
    g.p = want - 2 ^ g.L
  end
  return g
end

-- The key of bucket `i` of the stage `stage_key`: `<stage_key>:<i>`, `i` in decimal as
-- string.format('%d', i) writes it. Below 10^6 the digits come from two constant
-- tables (0..9, and 00..99), built on first use, and the key is made by one
-- concatenation: Lua formats a number with sprintf, and each string it makes is a new
-- one to hash, allocate and collect, which together cost about as much as the HINCRBY
-- on the bucket (docs/compact-slots.md, "Compact slots"). The leading group of digits,
-- 0..99 unpadded, is `ones[x + 1] or decimal_pairs[x + 1]`.
local ones, decimal_pairs
local function bucket_key(stage_key, i)
  if i >= 1000000 then return stage_key .. ':' .. string.format('%d', i) end
  if not decimal_pairs then
    ones = { '0', '1', '2', '3', '4', '5', '6', '7', '8', '9' }
    decimal_pairs = {
      '00', '01', '02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12', '13',
      '14', '15', '16', '17', '18', '19', '20', '21', '22', '23', '24', '25', '26', '27',
      '28', '29', '30', '31', '32', '33', '34', '35', '36', '37', '38', '39', '40', '41',
      '42', '43', '44', '45', '46', '47', '48', '49', '50', '51', '52', '53', '54', '55',
      '56', '57', '58', '59', '60', '61', '62', '63', '64', '65', '66', '67', '68', '69',
      '70', '71', '72', '73', '74', '75', '76', '77', '78', '79', '80', '81', '82', '83',
      '84', '85', '86', '87', '88', '89', '90', '91', '92', '93', '94', '95', '96', '97',
      '98', '99'
    }
  end
  if i < 100 then return stage_key .. ':' .. (ones[i + 1] or decimal_pairs[i + 1]) end
  local low = i % 100
  local high = (i - low) / 100
  if high < 100 then
    return stage_key .. ':' .. (ones[high + 1] or decimal_pairs[high + 1]) .. decimal_pairs[low + 1]
  end
  local middle = high % 100
  local top = (high - middle) / 100
  return stage_key .. ':' .. (ones[top + 1] or decimal_pairs[top + 1]) .. decimal_pairs[middle + 1]
    .. decimal_pairs[low + 1]
end
