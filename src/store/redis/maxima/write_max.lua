-- write_max.lua: the write of a max board (a min board too: the caller negates its
-- values) or of a latest board, docs/design.md, "Max and min boards" and "Latest
-- boards".
--
-- KEYS[1]                    board record      board_{b}
-- KEYS[2]                    slot index        slots_{b}
-- KEYS[3]                    what retirement reads per member: a max board's peak
--                            lists peaks_{b}, a latest board's newest events newest_{b}
-- KEYS[4]                    a recompute's build of the records  rebuild_records_{b}
-- KEYS[5]                    a recompute's build of its window    rebuild_{b}
-- KEYS[6]                    a keyed call's record idem_{b}_<version>_<name> (unkeyed:
--                            any key of the board, unused)
-- KEYS[7]                    slot geometries   slotgeo_{b}
-- KEYS[7+j], j = 1..n        totals of window j, smallest window first
-- KEYS[7+n+i], i = 1..m      distinct slot i's hash: member -> its highest value there
--                            (a latest board: '<at>:<value>' of its newest event there);
--                            a compact slot's values are in its buckets (the prelude's
--                            held_key: an event of a closed slot the retirer converted)
-- then, on a dense board only, per window j its tally and distinct values, then the
-- recompute build's
--
-- ARGV[1]                    board version the caller expects
-- ARGV[2], ARGV[3]           n (windows) and m (distinct slots)
-- ARGV[4]                    'max' or 'latest', then for a keyed call (an idempotency
--                            key's) ' key:<fingerprint>:<now ms>:<deadline ms>:<ttl ms>',
--                            for a call answering its standing
--                            ' standing:<window positions, 1-based>:<ties>:all'
-- ARGV[4+j], j = 1..n        window j in seconds
-- ARGV[4+n+j], j = 1..n      cutoff of window j at the caller's now
-- ARGV[4+2n+i], i = 1..m     start of distinct slot i
-- then the entries: slot number i, member, value (an integer within 2^53) and, on a
-- latest board, the event's time (unix ms).
--
-- Freezes every window up to its cutoff (write_stages), then per entry: a slot that
-- every window froze is too late; else, on a max board, the slot's hash keeps the
-- member's highest value there, its peak list takes (slot, value), and each window that
-- counts the slot (its watermark older than the slot) raises the member's value with
-- ZADD GT; on a latest board the slot's hash keeps the member's newest event there and,
-- when the event is the member's newest (newest_add), it is its record and its value in
-- each window that counts the slot (ZADD). Each of these is done in bulk for the call's
-- entries (at most a few hundred: the caller's calls). Every step keeps a maximum (of
-- values, or of (time, value)), so a call applied twice leaves what it left once: the
-- caller may send it again after a lost reply.
-- While a recompute holds its lease, each entry is merged into its build the same way
-- (recompute_max_scan.lua). While a member's removal is pending, its value from before
-- the removal in a slot still to clean is deleted before an event of it merges there
-- (remove_max.lua).
-- A dense board reads the members' values in each window first (one ZMSCORE a window)
-- and retallies each change (retally_all). A gated board then applies its gate (gate).
-- A keyed call is recorded under KEYS[6] (set_key_record: its fingerprint, its now and
-- the starts of its too-late slots), in the same call as it applies. Found with the same
-- fingerprint and now, it applies nothing and answers {'recorded', too-late slot start
-- ...}; with another now, {'found', that now} (the caller admits the events again at
-- that now, so their slots are the first call's); with another fingerprint, {'reused'}.
-- A call answering its standing reads each distinct member's value and rank in the
-- windows asked before applying anything and after (standing_of, as write.lua), and
-- appends them to its reply as one more element.
-- Returns {too-late slot number ...}; a keyed call {'applied', too-late slot start ...}.
-- Error "STALE ..." as write.lua.

local n, m = tonumber(ARGV[2]), tonumber(ARGV[3])
local board, index, records = KEYS[1], KEYS[2], KEYS[3]
local build_records, build_window, key_record_key = KEYS[4], KEYS[5], KEYS[6]
local TOTALS, SLOTS, A = 7, 7 + n, 4
local mode = string.match(ARGV[4], '^%a+')
local latest = mode == 'latest'
local fingerprint, key_now, deadline, ttl =
  string.match(ARGV[4], ' key:(%x+):(%d+):(%d+):(%d+)')
fingerprint = fingerprint or ''
local asked, ties = string.match(ARGV[4], ' standing:([%d,]+):(%a+):all')
local step = latest and 4 or 3
local DENSE = SLOTS + m
local dense_board = #KEYS > DENSE

local fields = { 'version', 'quiet' }
for j = 1, n do fields[2 + j] = 'wm:' .. ARGV[A + j] end
local record = board_record(board, ARGV[1], unpack(fields, 3))
if quiet_due then requiet(board) end
-- A recompute's window and lease, and a pending removal of a member (remove_max.lua).
local rb_window, rb_until, removing, removed_next, removed_written = busy_fields(board,
  'rb_window', 'rb_until', 'rm_member', 'rm_next', 'rm_written')
if fingerprint ~= '' then
  local found = key_record(key_record_key, fingerprint, key_now)
  if found == false then return { 'reused' } end
  if found then
    if found[1] ~= tonumber(key_now) then return { 'found', found[1] } end
    local reply = { 'recorded' }
    for x = 3, #found do reply[#reply + 1] = found[x] end
    return reply
  end
end
-- The window a recompute is building (its position), while the recompute holds its
-- lease (recompute_max_scan.lua).
local rebuilt = nil
if rb_window and lease_held(rb_until) then
  for j = 1, n do
    if ARGV[A + j] == rb_window then rebuilt = j end
  end
end
local stage = write_stages(board, fields, record, 2, A + n, A + 2 * n, n, m)
-- The standing asked: the members of the entries, read before and after.
local standing = nil
if asked then
  local members = {}
  for at = A + 2 * n + m + 1, #ARGV, step do members[#members + 1] = ARGV[at + 1] end
  local dense = dense_board and DENSE or nil
  standing = standing_of(asked, members, TOTALS, dense, ties == 'position', 'all')
end
for i = 1, m do
  local ts = ARGV[A + 2 * n + i]
  if stage[i] < n then redis.call('ZADD', index, 'NX', ts, ts) end
end

-- What a slot's hash holds for the entry at ARGV[at]: its value, or '<at>:<value>'.
local function held_form(at)
  if latest then return ARGV[at + 3] .. ':' .. ARGV[at + 2] end
  return ARGV[at + 2]
end
-- Whether the entry at ARGV[at] beats `held`, what the slot's hash holds (false: none).
local function beats(at, held)
  if not held then return true end
  if not latest then return tonumber(ARGV[at + 2]) > tonumber(held) end
  local t, v = string.match(held, '^(%-?%d+):(%-?%d+)$')
  local time = tonumber(ARGV[at + 3])
  return time > tonumber(t) or (time == tonumber(t) and tonumber(ARGV[at + 2]) > tonumber(v))
end

-- A dense board's ZADD of `set` (value, member, ...: in order, as the plain ZADD takes
-- them) on `totals`: each member's value after them (a max board: the highest of its old
-- and its new ones; a latest board: its last), retallied, and set in one ZADD.
local function set_tallied(totals, set, tally, dense)
  local members, final = {}, {}
  for x = 1, #set, 2 do
    local value, member = tonumber(set[x]), set[x + 1]
    if final[member] == nil then members[#members + 1] = member end
    if latest or final[member] == nil or value > final[member] then final[member] = value end
  end
  local old = redis.call('ZMSCORE', totals, unpack(members))
  local args = {}
  for x, member in ipairs(members) do
    local was, value = tonumber(old[x]), final[member]
    if not latest and was and was > value then value = was end
    if value ~= was then
      retally_all(tally, dense, was, value)
      args[#args + 1] = string.format('%d', value)
      args[#args + 1] = member
    end
  end
  if #args > 0 then redis.call('ZADD', totals, unpack(args)) end
end

-- The entries of slots some window still counts, in order; the slots' held values and
-- the members' records read in bulk (one HMGET per slot, one for the records), then
-- written in bulk (one HSET per slot, one for the records, one ZADD per window).
local too_late, live = {}, {}
for at = A + 2 * n + m + 1, #ARGV, step do
  local i = tonumber(ARGV[at])
  if stage[i] == n then
    too_late[i] = true
  else
    live[#live + 1] = at
  end
end
-- Merges the live entries into the records `records_key` and the window values
-- `targets` (window j -> {its values key, and on a dense board its tally and distinct
-- values}): per member one record (peaks_add, newest_add), per window one ZADD GT (a
-- latest board: ZADD of the values of events that were the member's newest); `routed`:
-- a hidden member's go to the window's <totals>:hidden (shown_values).
local function merge(records_key, targets, members, routed)
  local stored = redis.call('HMGET', records_key, unpack(members))
  local kept, changed = {}, {}
  for x, member in ipairs(members) do kept[member] = stored[x] end
  local set = {}
  for j in pairs(targets) do set[j] = {} end
  for _, at in ipairs(live) do
    local i, member, value = tonumber(ARGV[at]), ARGV[at + 1], ARGV[at + 2]
    local new
    if latest then
      new = newest_add(kept[member], ARGV[A + 2 * n + i], value, ARGV[at + 3])
    else
      new = peaks_add(kept[member], ARGV[A + 2 * n + i], value)
    end
    if new then
      kept[member] = new
      changed[member] = true
    end
    -- A max board raises every window that counts the slot (ZADD GT); a latest board
    -- sets them when the event is the member's newest (later entries come later).
    if new or not latest then
      for j = stage[i] + 1, n do
        local args = set[j]
        if args then
          args[#args + 1] = value
          args[#args + 1] = member
        end
      end
    end
  end
  local write = {}
  for _, member in ipairs(members) do
    if changed[member] then
      write[#write + 1] = member
      write[#write + 1] = kept[member]
    end
  end
  if #write > 0 then redis.call('HSET', records_key, unpack(write)) end
  for j, target in pairs(targets) do
    -- A window's hidden members' values go apart (a recompute's build holds every member).
    if routed then set[j] = shown_values(target[1], not latest and 'GT' or nil, set[j]) end
    if #set[j] == 0 then
    elseif target[2] then
      set_tallied(target[1], set[j], target[2], target[3])
    elseif latest then
      redis.call('ZADD', target[1], unpack(set[j]))
    else
      redis.call('ZADD', target[1], 'GT', unpack(set[j]))
    end
  end
end

if #live > 0 then
  -- A closed slot may be compact (the retirer converts it, compact_max.lua): the
  -- geometries of the call's slots older than the open one, in one read.
  local current = tonumber(ARGV[A + n + 1]) + tonumber(ARGV[A + 1])
  local older, geo = {}, {}
  for i = 1, m do
    if tonumber(ARGV[A + 2 * n + i]) < current then older[#older + 1] = i end
  end
  if #older > 0 then
    local starts = {}
    for x, i in ipairs(older) do starts[x] = ARGV[A + 2 * n + i] end
    local stored = redis.call('HMGET', KEYS[7], unpack(starts))
    for x, i in ipairs(older) do geo[i] = parse_geometry(stored[x]) end
  end
  -- The entries by the key that holds their member's value in their slot.
  local by_key, keys, members, listed = {}, {}, {}, {}
  for _, at in ipairs(live) do
    local i, member = tonumber(ARGV[at]), ARGV[at + 1]
    local key = held_key(KEYS[SLOTS + i], geo[i], member)
    if not by_key[key] then
      by_key[key] = {}
      keys[#keys + 1] = key
    end
    by_key[key][#by_key[key] + 1] = at
    if not listed[member] then
      listed[member] = true
      members[#members + 1] = member
    end
  end
  -- A pending removal of a member: its value from before the removal, in a slot still to
  -- clean, goes before the first event after the removal merges there.
  if removing and listed[removing] then
    local next_slot, written, added = tonumber(removed_next), {}, false
    for s in string.gmatch(removed_written or '', '[^,]+') do written[s] = true end
    for _, at in ipairs(live) do
      local i = tonumber(ARGV[at])
      local ts = ARGV[A + 2 * n + i]
      if ARGV[at + 1] == removing and tonumber(ts) >= next_slot and not written[ts] then
        redis.call('HDEL', KEYS[SLOTS + i], removing)
        if geo[i] then redis.call('HDEL', held_key(KEYS[SLOTS + i], geo[i], removing), removing) end
        written[ts], added = true, true
      end
    end
    if added then
      local list = {}
      for s in pairs(written) do list[#list + 1] = s end
      redis.call('HSET', board, 'rm_written', table.concat(list, ','))
    end
  end
  for _, key in ipairs(keys) do
    local ats = by_key[key]
    local fields_k = {}
    for x, at in ipairs(ats) do fields_k[x] = ARGV[at + 1] end
    local held = redis.call('HMGET', key, unpack(fields_k))
    local better = {}
    for x, at in ipairs(ats) do
      if beats(at, held[x]) then
        better[#better + 1] = ARGV[at + 1]
        better[#better + 1] = held_form(at)
      end
    end
    if #better > 0 then redis.call('HSET', key, unpack(better)) end
  end
  local targets = {}
  for j = 1, n do
    targets[j] = { KEYS[TOTALS + j] }
    if dense_board then targets[j] = { KEYS[TOTALS + j], KEYS[DENSE + 2 * j - 1], KEYS[DENSE + 2 * j] } end
  end
  merge(records, targets, members, true)
  gate_touched(members)
  -- While a recompute of window `rebuilt` holds its lease, the same into its build.
  if rebuilt then
    local target = { build_window }
    if dense_board then target = { build_window, KEYS[DENSE + 2 * n + 1], KEYS[DENSE + 2 * n + 2] } end
    merge(build_records, { [rebuilt] = target }, members, false)
  end
end
gate(board)
local reply = {}
if fingerprint ~= '' then
  local starts = {}
  for i in pairs(too_late) do starts[#starts + 1] = ARGV[A + 2 * n + i] end
  set_key_record(key_record_key, fingerprint, nil, key_now, deadline, ttl, starts)
  reply[1] = 'applied'
  for _, s in ipairs(starts) do reply[#reply + 1] = s end
else
  for i in pairs(too_late) do reply[#reply + 1] = i end
end
if standing then reply[#reply + 1] = standing() end
return reply
