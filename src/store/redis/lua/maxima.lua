-- maxima.lua: what max, min and latest boards keep per member: peak lists, the held
-- value of a slot in either form, and newest events.

-- Peak lists (write_max.lua, retire_max.lua; docs/design.md, "Max and min boards"). A
-- max board keeps, per member, the pairs '<slot>:<value>' of its live slots that no
-- newer slot matches, comma-separated: slots ascending, values strictly descending.
-- The member's value in a window whose cutoff is c is then the first pair past c.
-- Slots and values are integers below 2^53, so Lua's doubles compare them exactly.

-- The list `list` (false: none) with the pair (`slot`, `value`) (integer strings)
-- added, or nil when it adds nothing (a pair of that slot or a newer one holds as much).
local function peaks_add(list, slot, value)
  if not list then return slot .. ':' .. value end
  local s, v = tonumber(slot), tonumber(value)
  local out, placed = {}, false
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    local a = tonumber(ps)
    if a < s then
      if tonumber(pv) > v then out[#out + 1] = ps .. ':' .. pv end
    else
      if not placed then
        if tonumber(pv) >= v then return nil end
        out[#out + 1] = slot .. ':' .. value
        placed = true
      end
      if a > s then out[#out + 1] = ps .. ':' .. pv end
    end
  end
  if not placed then out[#out + 1] = slot .. ':' .. value end
  return table.concat(out, ',')
end

-- The value of the first pair of `list` (false: none) past slot `cutoff` (a number),
-- as a string; false when there is none.
local function peaks_after(list, cutoff)
  if not list then return false end
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    if tonumber(ps) > cutoff then return pv end
  end
  return false
end

-- The pairs of `list` (false: none) past slot `through` (a number); '' when none.
local function peaks_trim(list, through)
  if not list then return '' end
  local out = {}
  for ps, pv in string.gmatch(list, '(%-?%d+):(%-?%d+)') do
    if tonumber(ps) > through then out[#out + 1] = ps .. ':' .. pv end
  end
  return table.concat(out, ',')
end

-- A max, min or latest board's slot in its two forms (docs/design.md, "Compact slots of
-- max, min and latest boards"): the plain hash `slot_key` and, once the retirer gave the
-- slot a geometry (compact_max.lua), its buckets `<slot_key>:<i>`. A field only ever
-- moves from the plain hash into a bucket.

-- The better of two values a slot holds for a member (false/nil: none): the higher (a
-- max board), or the newer '<at>:<value>', of two at one ms the greater (a latest board).
local function better_held(a, b, latest)
  if not a then return b end
  if not b then return a end
  if not latest then
    if tonumber(a) >= tonumber(b) then return a end
    return b
  end
  local ta, va = string.match(a, '^(%-?%d+):(%-?%d+)$')
  local tb, vb = string.match(b, '^(%-?%d+):(%-?%d+)$')
  ta, va, tb, vb = tonumber(ta), tonumber(va), tonumber(tb), tonumber(vb)
  if ta > tb or (ta == tb and va >= vb) then return a end
  return b
end

-- The key that holds (or takes) `member`'s value in the slot `slot_key` of geometry
-- `geo` (nil: a plain slot).
local function held_key(slot_key, geo, member)
  if not geo then return slot_key end
  return bucket_key(slot_key, bucket_of(geo, member_hash(member)))
end

-- `member`'s value in the slot `slot_key` of geometry `geo`: the better of its two forms.
local function held_value(slot_key, geo, member, latest)
  local plain = redis.call('HGET', slot_key, member)
  if not geo then return plain end
  return better_held(plain, redis.call('HGET', held_key(slot_key, geo, member), member), latest)
end

-- One step of a scan of the slot `slot_key` (geometry `geo`, read by the caller in its
-- call) in both forms: the plain hash first, then each bucket, so a field the retirer
-- moves meanwhile is never missed. `cursor`: '0' (the start), 'p<n>' (the plain hash at
-- HSCAN cursor n) or 'b<i>:<n>' (bucket i). Steps on while the next bucket, at twice the
-- buckets' average, still fits in `count` fields (at least one bucket a step: a bucket is
-- one listpack, read whole). Returns the fields and values read (flat) and the next
-- cursor ('0': done).
local function slot_scan(slot_key, geo, cursor, count)
  local flat = {}
  local room = count
  if geo then room = count - 2 * math.max(1, math.floor(geo.count / bucket_count(geo))) end
  repeat
    local form, i, c = 'p', 0, '0'
    local b, n = string.match(cursor, '^b(%d+):(%d+)$')
    if b then
      form, i, c = 'b', tonumber(b), n
    elseif cursor ~= '0' then
      c = string.match(cursor, '^p(%d+)$')
    end
    local key = (form == 'p') and slot_key or bucket_key(slot_key, i)
    local step = redis.call('HSCAN', key, c, 'COUNT', count)
    for _, v in ipairs(step[2]) do flat[#flat + 1] = v end
    if step[1] ~= '0' then
      cursor = (form == 'p') and ('p' .. step[1]) or ('b' .. i .. ':' .. step[1])
    else
      local following = (form == 'p') and 0 or i + 1
      if geo and following < bucket_count(geo) then
        cursor = 'b' .. following .. ':0'
      else
        cursor = '0'
      end
    end
  until cursor == '0' or string.sub(cursor, 1, 1) ~= 'b' or #flat > 2 * room
  return flat, cursor
end

-- A step of a max, min or latest board's retirement or recompute: `member`'s value
-- (false: none) goes to the ZADD arguments `set`, or the member to the ZREM list `gone`.
local function set_or_gone(set, gone, member, value)
  if value then
    set[#set + 1] = value
    set[#set + 1] = member
  else
    gone[#gone + 1] = member
  end
end

-- Newest events (write_max.lua, retire_max.lua on a latest board; docs/design.md,
-- "Latest boards"). A latest board keeps, per member, its newest event as
-- '<slot>:<at>:<value>' (at in unix ms): of two events the later is the newer, of two at
-- the same millisecond the one of greater value. The member's value in a window whose
-- cutoff is c is that event's when its slot is past c (every older event is in an
-- older slot, so none is in a window that lacks the newest).

-- The record `record` (false: none) replaced by the event (`slot`, `value`, `at`)
-- (integer strings) when that is newer, else nil.
local function newest_add(record, slot, value, at)
  if record then
    local _, t, v = string.match(record, '^(%-?%d+):(%-?%d+):(%-?%d+)$')
    local a, b = tonumber(at), tonumber(t)
    if a < b or (a == b and tonumber(value) <= tonumber(v)) then return nil end
  end
  return slot .. ':' .. at .. ':' .. value
end

-- The value of `record` (false: none) when its slot is past `cutoff` (a number), as a
-- string; false otherwise.
local function newest_after(record, cutoff)
  if not record then return false end
  local s, _, v = string.match(record, '^(%-?%d+):(%-?%d+):(%-?%d+)$')
  if tonumber(s) > cutoff then return v end
  return false
end

-- `record` (false: none) when its slot is past `through` (a number), else ''.
local function newest_trim(record, through)
  if record and newest_after(record, through) then return record end
  return ''
end
