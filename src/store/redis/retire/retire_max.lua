-- retire_max.lua: retire one chunk of a frozen slot from one window of a max board, or
-- of a latest board (docs/design.md, "Max and min boards", "Latest boards").
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  slot index                      slots_{b}
-- KEYS[3]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[4]  the slot's hash                 slot_{b}_<ts>: member -> its highest value
--          (a latest board: '<at>:<value>' of its newest event there)
-- KEYS[5]  what a member's value is read from: peak lists peaks_{b} (a max board),
--          newest events newest_{b} (a latest board)
-- KEYS[6]  member data                     data_{b}
-- KEYS[7]  slot geometries                 slotgeo_{b}: a compact slot's buckets
-- KEYS[8], KEYS[9]  on a dense board only: this window's tally and distinct values
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  HSCAN COUNT of this call
-- ARGV[6]  '1' for the largest window, else ''
-- ARGV[7]  'max' or 'latest'
--
-- A call goes on from where the last call on this slot and window left off: the
-- record's field 'mxc:<W>' = '<slot>:<cursor>' (absent, or of another slot: from the
-- start), the cursor of the prelude's slot_scan (the plain hash, then a compact slot's
-- buckets: a member the retirer moves into a bucket meanwhile is met there, a member met
-- twice is re-evaluated twice, to the same value). So a pass that stopped, or another retirer, goes on from there, and a
-- client may keep two calls in flight, each taking the next step.
--
-- Each member the HSCAN step returns held a value in the slot, so its value in this
-- window may have come from it: the window's value becomes the first pair of its peak
-- list past the slot (a latest board: its newest event's value when that event's slot
-- is past this one) (ZADD), or, when none is left, the member leaves the window (ZREM;
-- the largest window also deletes its member data). The largest window also trims the
-- peak list to the pairs past the slot (a latest board: deletes a newest event of this
-- slot). A step's members are handled in bulk: one HMGET
-- of their lists, one ZADD, one ZREM (and on the largest window one HDEL of data, one
-- HSET and one HDEL of lists; a dense board's one ZMSCORE to retally), whatever their
-- number. The new value is a function of the peak list
-- alone, so a step applied twice (a re-sent call, two retirers) sets what it set once.
-- A member whose value came from another slot is not in this slot's hash: untouched.
-- A gated board then applies its gate (gate) to the step's members.
-- After the last step the window is retired through the slot (done:<W>), and the
-- largest window drops the slot's geometry and its index entry (each form of the slot is
-- deleted as its scan leaves it). Every cursor a call starts
-- from was answered by a step that ran, so a window is marked retired through the slot
-- only once some chain of steps has scanned its hash from start to end.
-- Returns {state, members re-evaluated, members that left}; state is 'done' when the
-- window is retired through the slot (also when it already was), else 'more'.
-- Errors: "STALE ...", "RECOMPUTING ..." (a recompute holds the board's lease, see
-- recompute_max_scan.lua: retirement waits), "ORDER ..." (the slot is not frozen, the smaller window has not
-- retired it, or an older live slot is still to retire from this window).

local board, index, totals, slot_key, records, data = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local geo_key = KEYS[7]
local prev_field = ARGV[3] ~= '' and ('done:' .. ARGV[3]) or 'version'
local cursor_field = 'mxc:' .. ARGV[2]
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[2], 'done:' .. ARGV[2], prev_field,
  cursor_field, 'rb_until')
if lease_held(record[7]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed; retirement waits')
end
local slot = tonumber(ARGV[4])
if tonumber(record[4]) >= slot then return { 'done', 0, 0 } end
if tonumber(record[3]) < slot then
  return redis.error_reply('ORDER the slot is not frozen out of this window')
end
if ARGV[3] ~= '' and tonumber(record[5]) < slot then
  return redis.error_reply('ORDER the smaller window has not retired the slot')
end
if #redis.call('ZRANGEBYSCORE', index, '(' .. record[4], '(' .. ARGV[4], 'LIMIT', 0, 1) > 0 then
  return redis.error_reply('ORDER an older slot is still to retire from this window')
end
local largest = ARGV[6] == '1'
local after, trim = peaks_after, peaks_trim
if ARGV[7] == 'latest' then after, trim = newest_after, newest_trim end

local cursor = '0'
if record[6] then
  local kept_slot, kept = string.match(record[6], '^(%-?%d+):(.+)$')
  if kept_slot == ARGV[4] then cursor = kept end
end
local geo = slot_geometry(geo_key, ARGV[4])
local flat, next_cursor = slot_scan(slot_key, geo, cursor, tonumber(ARGV[5]))
-- The step's members, each once (a scan may return one twice), and their records (peak
-- lists, newest events) in one HMGET; the window's new values in one ZADD, the members
-- that leave in one ZREM.
local members, seen = {}, {}
for x = 1, #flat, 2 do
  if not seen[flat[x]] then
    seen[flat[x]] = true
    members[#members + 1] = flat[x]
  end
end
local left = 0
if #members > 0 then
  local held = redis.call('HMGET', records, unpack(members))
  local set, gone, kept, emptied = {}, {}, {}, {}
  for i, member in ipairs(members) do
    local list = held[i]
    set_or_gone(set, gone, member, after(list, slot))
    if largest and list then
      local rest = trim(list, slot)
      if rest == '' then
        emptied[#emptied + 1] = member
      elseif rest ~= list then
        kept[#kept + 1] = member
        kept[#kept + 1] = rest
      end
    end
  end
  -- A hidden member's value is kept apart (see hidden_members), its data as any other's.
  if largest and #gone > 0 then redis.call('HDEL', data, unpack(gone)) end
  gate_touched(members)
  set, members, gone, left = shown_values(totals, nil, set, members, gone)
  if KEYS[8] and #members > 0 then retally_step(KEYS[8], KEYS[9], totals, members, set) end
  if #set > 0 then redis.call('ZADD', totals, unpack(set)) end
  if #gone > 0 then left = left + redis.call('ZREM', totals, unpack(gone)) end
  if #kept > 0 then redis.call('HSET', records, unpack(kept)) end
  if #emptied > 0 then redis.call('HDEL', records, unpack(emptied)) end
end
local handled = #members
gate(board)
-- The largest window deletes each form of the slot as the scan leaves it (no field comes
-- into a form behind the scan: the slot is frozen out of every window, and the retirer
-- converts no slot the largest window has frozen), so no call deletes many keys.
if largest then
  local function position(c)
    return tonumber(string.match(c, '^b(%d+):')) or -1
  end
  local from = position(cursor)
  local to = position(next_cursor)
  if next_cursor == '0' then to = geo and bucket_count(geo) or 0 end
  if from < 0 and to >= 0 then redis.call('DEL', slot_key) end
  for i = math.max(from, 0), to - 1 do redis.call('DEL', bucket_key(slot_key, i)) end
end
if next_cursor ~= '0' then
  redis.call('HSET', board, cursor_field, ARGV[4] .. ':' .. next_cursor)
  return { 'more', handled, left }
end
redis.call('HSET', board, 'done:' .. ARGV[2], ARGV[4])
redis.call('HDEL', board, cursor_field)
if largest then
  if geo then redis.call('HDEL', geo_key, ARGV[4]) end
  redis.call('ZREM', index, ARGV[4])
end
return { 'done', handled, left }
