-- write.lua: apply writes to one board, atomically.
--
-- KEYS[1]                    board record      board_{b}
-- KEYS[2]                    slot index        slots_{b}
-- KEYS[3]                    recompute build   rebuild_{b}
-- KEYS[4]                    recompute log     rebuild_log_{b}
-- KEYS[5]                    slot geometries   slotgeo_{b} (compact slots, see below)
-- KEYS[5+j], j = 1..n        totals of window j (stats_{b}, stats_{b}_<W>), smallest first
-- KEYS[5+n+(i-1)*n+k]        stage k (1..n) of distinct slot i (1..m):
--                            k = 1 is slot_{b}_<ts>, k > 1 is slot_{b}_<ts>_<k-1>
--                            (on a compact slot, the prefix of its buckets <key>:<i>)
-- KEYS[6+n+m*n]              with a token: the journal, journal_{b}; with a key: the
--                            key's record, idem_{b}_<version>_<key>
-- then, on a dense board only, per window j = 1..n: its tally (tally_{b}[_<W>]) and its
--                            distinct totals (dense_{b}[_<W>]), kept exact (see retally);
--                            then the recompute build's (rebuild_tally_{b},
--                            rebuild_dense_{b})
-- KEYS[#KEYS]                member data       data_{b}: a total of the largest window
--                            that reaches 0 deletes the member's data (add_total)
--
-- ARGV[1]                    board version the caller expects
-- ARGV[2]                    n, number of windows
-- ARGV[3]                    m, number of distinct slots
-- ARGV[4]                    mode: 'sums' or 'events' (see below)
-- ARGV[5]                    sums: the sum of |delta| over the original events; events:
--                            on a board that keeps contributors '<cap> <budget> <slot>'
--                            ('-' for none; the slot's length in seconds; see
--                            Contributors below), then ' <delta>' when every event of
--                            the call has that delta (the entries then leave it out);
--                            else ''
-- ARGV[6]                    a token making the call idempotent, or '' (see below)
-- ARGV[7]                    with a key: '<fingerprint>:<events>', the write's fingerprint
--                            (40 hex digits) and how many of its events this call carries
--                            (see Key below); otherwise ''
-- ARGV[8], ARGV[9]           with a key: the caller's now and the record's deadline
--                            (now + TTL), unix ms; otherwise ''
-- ARGV[10]                   with a key: the TTL in ms (the record's PX); otherwise ''
-- ARGV[11]                   '<layout> <fill> <hashed>': the layout of a slot this call
--                            creates when the record names none ('plain' or 'compact'),
--                            how many fields a compact slot's buckets hold on average
--                            before one splits, and '1' when the caller sends each
--                            entry's member hash (the prelude's member_hash, which the
--                            client computes for boards whose new slots are compact),
--                            else '0'; then, for a write that answers its standing only
--                            (see Standing below), ' <windows> <ties> <rank>': the
--                            positions j of the windows asked, comma-separated ('1,3'),
--                            the board's ties ('competition', 'dense' or 'position') and
--                            which totals it ranks ('positive' or 'nonzero')
-- ARGV[12]                   the call's time budget (see Budget below): '' (none: apply
--                            every entry), '<µs> <stride>' (the call may stop after every
--                            <stride> entries) or '<µs> 0 <e> <c> <e> <c> ...' (it may stop
--                            only after <e> entries, which carry the write's first <c>
--                            events; ascending)
-- ARGV[12+j], j = 1..n       window j in seconds (names the field wm:<W>)
-- ARGV[12+n+j], j = 1..n     cutoff of window j at the caller's now: slot_start(now) - W
-- ARGV[12+2n+i], i = 1..m    start of distinct slot i
-- ARGV[13+2n+m]              when <hashed> is 1 only: the member hashes of the entries, in
--                            their order, 4 bytes each, big-endian, in one argument (a
--                            separate argument per entry costs Redis a string to parse and
--                            one to make for Lua, as much as the bucket key the hash names)
-- then the entries: with one slot (m = 1) member, delta; with several, slot number i,
-- member, delta; on a board that keeps contributors (mode 'events' with caps) each
-- entry then its contributor ('' for none), and no delta when ARGV[5] gives the one
-- they all have. Deltas are integers.
--
-- First every window whose cutoff passed its watermark is frozen up to the cutoff
-- (wm:<W> := cutoff), so an event for a slot that left a window skips that window even
-- before retirement runs. An entry's stage k is the number of windows that froze its
-- slot (a prefix, since watermarks never increase with the window). k = n is too late.
-- Otherwise it goes to stage k+1 of its slot and to the totals of windows k+1..n; a field
-- or member whose value becomes exactly 0 is deleted.
--
-- Range: deltas, totals and slot values must stay inside +-(2^53 - 1). The record's field
-- abs_sum bounds every stored magnitude (each is a sum of accepted deltas).
--   mode 'sums': the caller summed its events per slot and member, so each (slot, member)
--     appears once. If abs_sum + ARGV[5] <= 2^53 - 1 no value can leave the range, so
--     nothing is checked: each entry is one HINCRBY and one ZINCRBY per window that
--     counts it, and abs_sum grows by the sum of |entry|. Past that bound (a huge delta
--     was written once) the call checks the values the batch touches: each totals
--     set's extremes and each entry's slot value (see totals_have_room and
--     apply_checked). If each
--     satisfies |value| + ARGV[5] <= 2^53 - 1, no event of the batch can take it out of
--     range whatever their order, and the entries are applied the same way (abs_sum
--     stays at the limit). Returns {0, µs, e, slot number ...}: the first e entries
--     applied (all of them unless the call stopped at its budget) except those of the
--     listed slots, which are too late. Past the bound the check is made group by group
--     (each group's own entries, the totals once for the call), each group checked before
--     it is applied and undone whole if one of its values lacks room, so no undo is ever
--     pending where the call stops: when the first group lacks room nothing is applied
--     (the freeze aside) and it returns {2, µs}: the caller sends the original events in
--     mode 'events'; when a later one does, the call stops before it ({0, µs, e, ...}) and
--     the next call (whose first group it is) answers {2, µs}.
--   mode 'events': the original events in order, each checked against the current values
--     and applied alone; abs_sum is set to the limit, so the board stays exact. Returns
--     {1, µs, status per event applied}: 0 applied, 1 too late, 2 out of range (fewer
--     statuses than events when the call stopped at its budget).
-- µs is the call's own duration by the server's clock (TIME at its start and end): the
-- caller sizes its next calls from it so that none holds Redis long (ingest.rs); 0 for
-- a call that cannot stop at its budget (see Budget), which reads no clock.
-- Budget: with ARGV[12] set, the call reads the clock at each of its stop points (every
-- <stride> entries, or at the listed ones) and stops there once it has run <µs> (always
-- after its first group: progress); the caller sends the rest in its next call. It
-- stops between entries (mode 'sums': whole (slot, member) pairs, so abs_sum grows by
-- what was applied only) or between events (mode 'events'). Under a key the record holds
-- how many events were applied (the <c> of the stop, in mode 'events' the statuses), so
-- a retry follows it; a token call has no budget (its journal covers the whole call).
-- Recompute: while a recompute of window r holds its lease (rb_* fields, see
-- recompute_begin.lua), every applied entry that counts in window r is also told to it
-- with its stage key (the prelude's recompute_hook: during the scan what it does depends
-- on how far the scan of that stage hash is), and a slot this call creates during the
-- scan has its counted stages marked scanned (recompute_new_slot).
-- Token: a call with a token recorded in the journal applies nothing and returns {3};
-- otherwise the token is recorded in the same call that applies the writes, so a job
-- that replays its calls after a crash (the legacy import) counts each exactly once.
-- Key: a client's idempotency key. Its record (the prelude's key records:
--   '<fingerprint>:<events> <now> <deadline> <reply...>'), set with PX = TTL in the same
--   call that applies the writes, holds how many events the call applied, the caller's
--   now and what the call answered: in mode 'sums' '0' and the start of each too-late
--   slot, in mode 'events' '1' and each status. A call finding a record whose deadline is
--   after its now applies nothing: it returns {4, recorded now, recorded events (-1 in a
--   record written before counts were kept), recorded reply...} when the fingerprint is
--   the same (whatever the count: a retry that splits the write otherwise learns where
--   this part ended), {5} when it is not (the key names another write). A record past its deadline by the caller's clock
--   is as good as absent (and overwritten); Redis deletes it by itself at its PX. A call
--   that applies nothing because it needs mode 'events' ({2}) records nothing.
-- Slot forms (the prelude's write_slots): a slot created by this call (not yet in the
-- index) is plain when it starts at or after the current slot (cutoff of window 1 +
-- window 1: the open slot, or a future one within the skew), whatever the layout: nearly
-- every write goes there, and a hashtable takes it cheaper than buckets; the retirer
-- compacts it once it closed (retire_small.lua tells it, relayout_chunk.lua converts
-- it). An older slot created by this call (a late event) is compact when the board's
-- layout (its record's, else ARGV[11]'s) is; an entry of a compact slot goes to its
-- member's bucket of the stage, and stage 1 grows by linear hashing while no window froze
-- the slot; once one did its geometry never changes again, so retirement can move whole
-- buckets. A slot being relaid out to plain takes writes in the plain stage hashes; the
-- range checks read both forms of a compact slot's stage.
-- Dense tallies (the prelude's window_totals): on a dense board every change of a
-- window's total is tallied too.
-- Standing: with the standing words in ARGV[11] (no budget: the caller sends such a
--   call alone, never through group commit), the call reads, for each distinct member of
--   its entries (in order of first appearance) and each window asked, the member's total
--   and rank just before applying anything (after the freeze) and again after applying,
--   with the prelude's member_rank (the ranks read_ranking.lua answers), and returns
--   {reply, standing} where reply is what it returns without them ({0, ...} or
--   {1, ...}) and standing is flat: per member, per window asked, total before, rank
--   before, total after, rank after (a total is 0 without one; a rank false when not
--   ranked). Its other replies ({2, µs}, {3}, {4, ...}, {5}) are as without them.
--   Cost: O(members x windows x log N) more; the caller bounds members x windows (200).
-- Contributors (lua/contributors.lua; the caller sends such a board's writes in mode
--   'events'): an event with a contributor goes to its slot stage's contributions, not
--   to the member's value. With a budget, the part of it admitted is fixed first (a
--   like: at most the budget less what the contributor's admitted likes use inside the
--   largest window; an unlike: at most what its admitted events gave the member there;
--   both without the slots that window froze and has not retired) and the rest is kept
--   as refused; without one all of it is admitted. Each window that counts it gets what
--   the admitted part changes of the member's counted part (the pair's admitted sum
--   there clamped to +-cap; in window 1 one slot long, that sum is its stage-1 parts in
--   the slots window 1 has not retired, contrib_derived: the event's own HINCRBY gives
--   its slot's); its status is contrib_code of what it changes in the
--   largest window at the caller's now (without the slots that window froze and has not
--   retired, which retirement takes out of the sums). The contributor's index counts
--   the stage fields each event makes or deletes (contrib_index). A held contributor's
--   events (contrib_flag, read when the record's ctr_q says some contributor is held) go
--   to its held sums, which no total counts, and answer the same status. A call whose
--   events cannot take any value out of range (abs_sum + the sum of their |delta| <=
--   2^53 - 1: every stored magnitude, clamped or not, is at most the sum of the deltas
--   that made it) checks none and grows abs_sum; otherwise each event is checked (its
--   pair's slot value and sums, and the totals) and abs_sum is set to the limit.
-- Error "STALE ..." when the board record is missing, being dropped or of another version.

local MAX = 9007199254740991
local board, index = KEYS[1], KEYS[2]
local n, m, mode = ARGV[2] + 0, ARGV[3] + 0, ARGV[4]
local A = 12 -- ARGV[A + j]: windows, then cutoffs, then slot starts

-- The entries: where they start, with or without a member hash and a contributor each,
-- and how many there are. Slot forms (prelude): plain, compact, or compact being relaid
-- out as plain.
local new_layout, fill, hashed, asked = string.match(ARGV[11], '^(%a+) (%d+) ([01]) ?(.*)$')
local hashes = hashed == '1' and ARGV[A + 2 * n + m + 1] or nil
local first = A + 2 * n + m + (hashes and 2 or 1)
local numbered = (m == 1) and 0 or 1
-- Contributors (see the header): whether the board keeps them, its cap and its budget
-- (nil: none), whether its window 1 keeps no counted sums (contrib_derived), and the
-- delta every event of the call has when ARGV[5] gives it (`same`: the entries then
-- leave it out, since an argument costs Redis about what a short command does).
local keeps, cap, budget, slot_length, derived, same = false, nil, nil, nil, false, nil
if mode == 'events' and ARGV[5] ~= '' then
  local c, b, s, d = string.match(ARGV[5], '^(%S+) (%S+) (%S+) ?(%S*)$')
  keeps, cap, budget, same = true, tonumber(c), tonumber(b), d ~= '' and d or nil
  slot_length, derived = s, contrib_derived(s, ARGV[A + 1])
end
local stride = 2 + numbered + (keeps and 1 or 0) - (same and 1 or 0)
local count = (#ARGV - first + 1) / stride

-- The budget (see the header): the µs after which the call stops at its next stop point
-- (nil: none), and the stop points, every `group` entries or listed in `stop_list`. The
-- call reads the server's clock (started) only when it may stop: a call of at most
-- `group` entries answers 0 µs, which the caller does not take in (sums/budget.rs).
local limit, group, stop_list = nil, 0, ''
if ARGV[12] ~= '' then
  local us, every, rest = string.match(ARGV[12], '^(%d+) (%d+)(.*)$')
  limit, group, stop_list = us + 0, every + 0, rest
end
local started = limit and (group == 0 or count > group) and now_us()
-- The call's duration so far, in µs (0 when it reads no clock).
local function took()
  return started and now_us() - started or 0
end
if limit and group > 0 and mode == 'sums' and ARGV[7] ~= '' then
  -- Its record could not say which events it applied.
  return redis.error_reply('ERR write.lua: a keyed call in mode sums stops at listed points only')
end

local TOTALS, STAGES = 5, 5 + n
local geo_key = KEYS[5]
local fields = { 'version', 'quiet', 'abs_sum' }
for j = 1, n do fields[3 + j] = 'wm:' .. ARGV[A + j] end
fields[4 + n] = 'layout'
if derived then fields[5 + n] = 'done:' .. ARGV[A + 1] end
local record = board_record(board, ARGV[1], unpack(fields, 3))
if quiet_due then requiet(board) end
-- A recompute's lease and where it is, and how many contributors are held (nil: none).
local rb_window, rb_phase, rb_until, fold_member, fold_slot, held_count = busy_fields(board,
  'rb_window', 'rb_phase', 'rb_until', 'rb_fold_member', 'rb_fold_slot', 'ctr_q')
local token, journal = ARGV[6], KEYS[6 + n + m * n]
if token ~= '' and redis.call('HEXISTS', journal, token) == 1 then
  -- Written again, unchanged, for a caller that waits for replicas (see key_record).
  redis.call('HSET', journal, token, redis.call('HGET', journal, token))
  return { 3 }
end
local fingerprint, idem = ARGV[7], KEYS[6 + n + m * n]
-- Dense boards: where the tally and distinct-totals keys start (see the header).
local DENSE = 5 + n + m * n + ((token ~= '' or fingerprint ~= '') and 1 or 0)
local dense_board = #KEYS > DENSE + 1 -- the last key is data_{b}
local build_tally, build_dense = nil, nil
if dense_board then build_tally, build_dense = KEYS[DENSE + 2 * n + 1], KEYS[DENSE + 2 * n + 2] end

local add_window = window_totals(TOTALS, dense_board and DENSE, n, KEYS[#KEYS])
local fp, carried = string.match(fingerprint, '^([^:]*):?(%d*)$')
if fingerprint ~= '' then
  local found = key_record(idem, fp, ARGV[8])
  if found == false then return { 5 } end
  if found then
    table.insert(found, 1, 4)
    return found
  end
end

-- Records, under the key (if any), what this call answers: `recorded` as a list, after
-- applying the write's first `events` events (nil: all it carried).
local function remember(recorded, events)
  if fingerprint ~= '' then
    set_key_record(idem, fp, events or carried, ARGV[8], ARGV[9], ARGV[10], recorded)
  end
end
local bound = tonumber(record[3])
local margin = tonumber(ARGV[5])
local bounded = mode == 'sums' and bound ~= nil and bound + margin <= MAX

local stage = write_stages(board, fields, record, 3, A + n, A + 2 * n, n, m)

-- The window being recomputed (its position), while its recompute holds the lease.
local rebuilt = nil
if rb_window and lease_held(rb_until) then
  for j = 1, n do
    if ARGV[A + j] == rb_window then rebuilt = j end
  end
end
local tell_recompute = recompute_hook(board, KEYS[3], KEYS[4], rebuilt, rb_phase == 'scan',
  fold_member, fold_slot, build_tally, build_dense)

if record[4 + n] then new_layout = record[4 + n] end
-- The current slot's start: fresh slots from it on are created plain (see the header).
local current = ARGV[A + n + 1] + ARGV[A + 1]
local slots = write_slots(board, geo_key, index, STAGES, n, m, A + 2 * n, stage, new_layout,
  fill + 0, current)
local geo, target_key, value_in, counted = slots.geo, slots.key, slots.value, slots.counted
local save_geometries = slots.save

local byte = string.byte

-- The slot number, member, delta, member hash (nil if not sent) and contributor (nil
-- unless the board keeps them) of entry e (0-based).
local function entry(e)
  local at = first + stride * e
  local i = numbered == 1 and ARGV[at] + 0 or 1
  local h = nil
  if hashes then
    local b1, b2, b3, b4 = byte(hashes, 4 * e + 1, 4 * e + 4)
    h = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
  end
  if same then return i, ARGV[at + numbered], same, h, ARGV[at + numbered + 1] end
  return i, ARGV[at + numbered], ARGV[at + numbered + 1], h, keeps and ARGV[at + numbered + 2]
end

-- Past the bound, every value the batch touches must have room for `margin` more in
-- either direction, so that no order of its events takes it out of range. Totals: each
-- totals set's lowest and highest score (O(log N) each) bound all of its members. Slot
-- values (the sum of a slot's stages): for an entry of a slot no window froze, the slot
-- value is its stage-1 value, which the HINCRBY that applies it returns, so those are
-- applied first and checked from what HINCRBY answers (undone, exactly, if one lacks
-- room); the other entries' slot values, and those of entries that sum to 0, are read
-- in bulk (one HMGET per stage hash).

-- Whether each totals set's extremes have room.
local function totals_have_room()
  for j = 1, n do
    for _, at in ipairs({ 0, -1 }) do
      local extreme = redis.call('ZRANGE', KEYS[TOTALS + j], at, at, 'WITHSCORES')[2]
      if extreme and math.abs(tonumber(extreme)) + margin > MAX then return false end
    end
  end
  return true
end

-- Applies the stage-1 HINCRBY of each non-zero entry `from`..`to` - 1 (a group) of a
-- slot no window froze, checking the value it had, and reads the group's other entries'
-- slot values in bulk; returns entry -> new stage value, or nil, with everything of the
-- group undone, when one value lacks room.
local function apply_checked(from, to)
  local applied, others = {}, {}
  local room = true
  for e = from, to - 1 do
    local i, member, delta, h = entry(e)
    local k = stage[i]
    if k == 0 and delta ~= '0' then
      local value = redis.call('HINCRBY', target_key(i, 1, member, h), member, delta)
      counted(i, value, delta)
      applied[e] = value
      -- Both forms: on a compact slot a relayout under way may leave a value in each.
      local total = geo[i] and value_in(i, 1, member, h) or value
      if math.abs(total - tonumber(delta)) + margin > MAX then
        room = false
        break
      end
    elseif k < n then
      others[i] = others[i] or {}
      others[i][#others[i] + 1] = member
    end
  end
  for i, list in pairs(room and others or {}) do
    local values = {}
    for st = 1, stage[i] + 1 do
      if geo[i] then
        for x = 1, #list do values[x] = (values[x] or 0) + value_in(i, st, list[x]) end
      else
        local stored = redis.call('HMGET', KEYS[STAGES + (i - 1) * n + st], unpack(list))
        for x = 1, #list do values[x] = (values[x] or 0) + (tonumber(stored[x]) or 0) end
      end
    end
    for x = 1, #list do
      if math.abs(values[x]) + margin > MAX then room = false end
    end
  end
  if room then return applied end
  for e in pairs(applied) do
    local i, member, delta, h = entry(e)
    local key = target_key(i, 1, member, h)
    if redis.call('HINCRBY', key, member, negate(delta)) == 0 then
      redis.call('HDEL', key, member)
    end
  end
  return nil
end

local list_at = 1
-- The end of the group that starts at entry `from` (0-based): the entries applied once
-- it is, and at a listed stop how many events they carry (nil at the last entry).
local function group_end(from)
  if not limit then return count end
  if group > 0 then return math.min(from + group, count) end
  while true do
    local _, last, e, c = string.find(stop_list, '(%d+) (%d+)', list_at)
    if not e then return count end
    list_at = last + 1
    e = tonumber(e)
    if e >= count then return count end
    if e > from then return e, tonumber(c) end
  end
end
-- Whether the call has run its budget (read at stop points only: TIME is not free).
local function spent()
  return started and now_us() - started >= limit
end

-- Standing (see the header): the members of the entries in the windows asked, read
-- before anything is applied and again at the end.
local standing = nil
if asked ~= '' then
  local list, ties, rank = string.match(asked, '^([%d,]+) (%a+) (%a+)$')
  local members = {}
  for x = 0, count - 1 do
    local _, member = entry(x)
    members[x + 1] = member
  end
  local dense = dense_board and DENSE or nil
  -- A quarantined contributor's write answers as if it were not: what the held writers
  -- of the call gave each member (unless it is hidden) counts in the standing it reads.
  local as_if = nil
  if keeps and (tonumber(held_count) or 0) > 0 then
    local held, met = {}, {}
    for x = 0, count - 1 do
      local by = select(5, entry(x))
      if by ~= '' and not met[by] then
        met[by] = true
        local ctr = board .. ':ctr:' .. by
        if contrib_flag(ctr, held_count) then held[#held + 1] = ctr end
      end
    end
    if #held > 0 then
      as_if = function(j) return contrib_as_if(held, ARGV[A + j], cap, KEYS[TOTALS + j]) end
    end
  end
  standing = standing_of(list, members, TOTALS, dense, ties == 'position', rank == 'nonzero',
    as_if)
end
-- The reply `reply` of a call that applied its entries, with the standing asked (if any).
local function answered(reply)
  gate(board)
  record_changes(board, 'write')
  return standing and { reply, standing() } or reply
end

-- Applies an event of slot `i` to its stage k + 1 (`value`: the stage's value after
-- the HINCRBY `apply_checked` already made, if it did) and to the windows counting it,
-- deleting at exactly 0 (increments commute, so a member in several slots needs no
-- summing here).
local function apply(i, k, member, delta, h, value)
  local target = target_key(i, k + 1, member, h)
  if not value then
    value = redis.call('HINCRBY', target, member, delta)
    counted(i, value, delta)
  end
  if value == 0 then redis.call('HDEL', target, member) end
  for j = k + 1, n do add_window(j, member, delta) end
  if tell_recompute then
    tell_recompute(ARGV[A + 2 * n + i], k, member, delta, KEYS[STAGES + (i - 1) * n + k + 1])
  end
end

-- Entry -> its stage value after the HINCRBY already made (past the bound only), for
-- the group being applied; the first group ends at `stop`.
local applied = {}
local stop, stop_events = group_end(0)
if mode == 'sums' and not bounded then
  applied = totals_have_room() and apply_checked(0, stop)
  if not applied then return { 2, took() } end
end
if token ~= '' then
  redis.call('HSET', journal, token, 1)
end
for i = 1, m do
  if stage[i] < n then
    local ts = ARGV[A + 2 * n + i]
    if redis.call('ZADD', index, 'NX', ts, ts) == 1 and tell_recompute and rb_phase == 'scan' then
      local counted_stages = {}
      for st = 1, rebuilt do counted_stages[st] = KEYS[STAGES + (i - 1) * n + st] end
      recompute_new_slot(KEYS[3], counted_stages)
    end
  end
end

if mode == 'sums' then
  -- Each entry: HINCRBY its stage, ZINCRBY the windows that count it.
  local too_late, grown = {}, 0
  local e, events = 0, nil
  while true do
    for x = e, stop - 1 do
      local i, member, delta, h = entry(x)
      local k = stage[i]
      if k == n then
        too_late[i] = true
      elseif delta ~= '0' then
        apply(i, k, member, delta, h, applied[x])
        grown = grown + math.abs(delta)
      end
    end
    e = stop
    if e >= count then break end
    -- A stop point: stop once the budget is spent, or before a group that lacks room.
    if spent() then
      events = stop_events
      break
    end
    local next_stop, next_events = group_end(e)
    if not bounded then
      applied = apply_checked(e, next_stop)
      if not applied then
        events = stop_events
        break
      end
    end
    stop, stop_events = next_stop, next_events
  end
  if not bounded then
    if bound ~= MAX then redis.call('HSET', board, 'abs_sum', MAX) end
  elseif grown > 0 then
    redis.call('HINCRBY', board, 'abs_sum', grown)
  end
  local reply, slots = { 0, 0, e }, { 0 }
  for i in pairs(too_late) do
    reply[#reply + 1] = i
    slots[#slots + 1] = ARGV[A + 2 * n + i]
  end
  save_geometries()
  remember(slots, events)
  reply[2] = took()
  return answered(reply)
end

-- Mode 'events': check every event against the current values, in order.

-- Contributors (see the header): whether no event of the call can leave the range, and
-- the sum of |delta| over the events applied.
local unchecked, applied_abs = false, 0
if keeps then
  local sum, abs = 0, math.abs
  if same then
    sum = abs(same) * count
  else
    for at = first + numbered + 1, #ARGV, stride do sum = sum + abs(ARGV[at]) end
  end
  unchecked = bound ~= nil and bound + sum <= MAX
end

-- Whether an event of `d` keeps `member`'s value in slot i (stages 1..k+1: those above
-- cannot hold anything yet) and its totals in windows k+1..n in range.
local function in_range(i, k, member, h, d)
  local value = 0
  for st = 1, k + 1 do value = value + value_in(i, st, member, h) end
  if math.abs(value + d) > MAX then return false end
  for j = k + 1, n do
    local total = tonumber(redis.call('ZSCORE', KEYS[TOTALS + j], member)) or 0
    if math.abs(total + d) > MAX then return false end
  end
  return true
end

-- The slots the largest window froze and has not retired yet, which the window's sums
-- still hold (from the slot index, once per call; their keys named as the call's are):
-- usually none.
local left_slots, slot_prefix = {}, nil
if keeps then
  local wm = math.max(tonumber(record[3 + n]), tonumber(ARGV[A + 2 * n]))
  left_slots = redis.call('ZRANGEBYSCORE', index, '-inf', wm)
  local named = KEYS[STAGES + 1]
  slot_prefix = string.sub(named, 1, #named - #ARGV[A + 2 * n + 1])
end
-- Window 1 when it keeps no counted sums: the slots it has not retired (this call's
-- included), whose stage-1 parts of a pair sum to its sum there; `lone`, that one slot.
local first_live, lone = nil, nil
if derived then
  first_live = contrib_first_live(index, slot_length, ARGV[A + 1], record[5 + n])
  if not first_live[2] then lone = first_live[1] end
end
-- What `pair` sums to in stage 1 of those slots, but slot i's (all with i nil).
local function first_others(pair, i)
  local skip = i and ARGV[A + 2 * n + i]
  if lone and lone == skip then return 0 end
  return contrib_first_sum(slot_prefix, first_live, pair, skip)
end
-- What `by`'s admitted events to `member` and its admitted likes (the budget they use)
-- sum to in those slots (called only when there are some).
local function left_behind(by, member)
  local pair, given, used = by .. '\n' .. member, 0, 0
  for _, s in ipairs(left_slots) do
    for st = 1, n do
      local key = slot_prefix .. s .. (st > 1 and ('_' .. (st - 1)) or '') .. ':c'
      given = given + (tonumber(redis.call('HGET', key, pair)) or 0)
      if budget and st == n then used = used + (tonumber(redis.call('HGET', key, by)) or 0) end
    end
  end
  return given, used
end

-- Whether the sums an event adds `a` admitted and `r` refused to stay in range: the
-- pair's values in slot i (stages 1..k+1), its admitted sums in windows k+1..n and the
-- member's totals there.
local function contribution_in_range(i, k, ctr, flag, by, member, a, r)
  local base = STAGES + (i - 1) * n
  local pair, value, refused = by .. '\n' .. member, 0, 0
  for st = 1, k + 1 do
    local key = KEYS[base + st] .. ':c'
    value = value + (tonumber(redis.call('HGET', key, pair)) or 0)
    refused = refused + (tonumber(redis.call('HGET', key, '\n' .. pair)) or 0)
  end
  if math.abs(value + a) > MAX or math.abs(refused + r) > MAX then return false end
  for j = k + 1, n do
    local sum, counts
    if j == 1 and derived then
      sum = first_others(pair)
      counts = not contrib_first_held(ctr, ARGV[A + 1], member, sum, flag)
    else
      local field
      field, counts = contrib_sum_field(ctr, ARGV[A + j], member, flag)
      sum = tonumber(redis.call('HGET', ctr, field)) or 0
    end
    local total = tonumber(redis.call('ZSCORE', KEYS[TOTALS + j], member)) or 0
    local change = counts and contrib_change(cap, sum, a) or 0
    if math.abs(sum + a) > MAX or math.abs(total + change) > MAX then
      return false
    end
  end
  return true
end

-- A call's history updates, summed per slot and member (<stage 1>:cm), and, when no
-- event is checked (a check reads the totals), what it changes of the windows' totals,
-- per window and member, applied once at its end (flush_contributions): a Zipf batch's
-- hot post costs one of each. The contributor's index (the count of stage fields, see
-- contrib_index) is updated at once: its field is a pair's, which one call rarely
-- repeats, and a table of them per contributor cost more than it saved.
local history, changes = {}, unchecked and {} or nil
-- While some contributor is held, each contributor's hash and hold (contrib_flag; false:
-- none), read once a call (otherwise its hash is named anew: a call's contributors are
-- mostly distinct, and two table entries each cost more than the name); each stage's
-- contributions key, made once a call.
local ctrs, flags, stage_pairs = {}, {}, {}
-- The contributions key of the stage KEYS[at].
local function pairs_key(at)
  local key = stage_pairs[at]
  if not key then
    key = KEYS[at] .. ':c'
    stage_pairs[at] = key
  end
  return key
end

-- Applies an event of `d` given by `by` to slot i at stage k (see the header): its status.
-- `given`, what by's admitted events gave the member inside the largest window at the
-- caller's now, is read before applying an unlike on a board with a budget (it bounds
-- it), else from the largest window's sum the event's own HINCRBY returns.
local function contribute(i, k, member, d, by, delta)
  local ctr, flag = ctrs[by], nil
  if ctr then
    flag = flags[by] or nil
  elseif held_count then
    ctr = board .. ':ctr:' .. by
    flag = contrib_flag(ctr, held_count)
    ctrs[by], flags[by] = ctr, flag or false
  else
    ctr = board .. ':ctr:' .. by
  end
  local a, given = d, nil
  if budget then
    local left_given, left_used = 0, 0
    if left_slots[1] then left_given, left_used = left_behind(by, member) end
    if d > 0 then
      -- What by gave the member comes from the largest window's HINCRBY below, as on a
      -- board without a budget: a like reads only the budget used.
      local used = (tonumber(redis.call('HGET', ctr, 'u')) or 0) - left_used
      a = math.min(d, math.max(0, budget - used))
    else
      if n == 1 and derived then
        given = first_others(by .. '\n' .. member) - left_given
      else
        local field = contrib_sum_field(ctr, ARGV[A + n], member, flag)
        given = (tonumber(redis.call('HGET', ctr, field)) or 0) - left_given
      end
      a = math.max(d, -math.max(0, given))
    end
  end
  local r = d - a
  -- What the HINCRBYs add, as the event's own text when all of it is admitted.
  local text = a == d and delta or nil
  if not unchecked and not contribution_in_range(i, k, ctr, flag, by, member, a, r) then
    return 2
  end
  -- The pair's field, named once (a refused like names its refused field only).
  local base, pair = STAGES + (i - 1) * n, a ~= 0 and (by .. '\n' .. member)
  local stage_key = stage_pairs[base + k + 1] or pairs_key(base + k + 1)
  local slot = ARGV[A + 2 * n + i]
  -- made: what the index count changes by (as contrib_stage_add); before1: the pair's
  -- sum in window 1 before this event, when it keeps no counted sums.
  local made, before1 = 0, nil
  if a ~= 0 then
    -- contrib_add, written out (this runs for every like: a Lua call costs hundreds of
    -- instructions), as is first_others' test of the call's lone slot.
    local value = redis.call('HINCRBY', stage_key, pair, text or string.format('%d', a))
    if value == 0 then redis.call('HDEL', stage_key, pair) end
    made = value == 0 and -1 or (value == a and 1 or 0)
    if derived and k == 0 then
      before1 = value - a
      if lone ~= slot then before1 = before1 + first_others(pair, i) end
    end
  end
  if r ~= 0 then
    local refused = '\n' .. (pair or (by .. '\n' .. member))
    made = made + contrib_stage_add(stage_key, refused, r, a == 0 and delta or nil)
  end
  if made ~= 0 then contrib_index(ctr, contrib_index_field(slot, member), made) end
  if budget and a > 0 then
    if contrib_stage_add(pairs_key(base + n), by, a, text) == 1 then
      contrib_index(ctr, contrib_index_field(slot), 1)
    end
    contrib_add(ctr, 'u', a, text)
  end
  local h = history[i] or {}
  history[i], h[member] = h, (h[member] or 0) + d
  applied_abs = applied_abs + (d < 0 and -d or d)
  if a == 0 then return 3 end -- contrib_code(0)
  for j = k + 1, n do
    local change, sum
    if j > 1 or not derived then
      change, sum = contrib_window(ctr, ARGV[A + j], member, a, cap, flag, text)
    elseif flag then
      change, sum = contrib_first(ctr, ARGV[A + 1], member, before1, a, cap, flag)
    else
      -- contrib_first without a hold, written out (a Lua call costs hundreds of
      -- instructions).
      change, sum = contrib_change(cap, before1, a), before1 + a
    end
    if change ~= 0 and changes then
      local window = changes[j] or {}
      changes[j], window[member] = window, (window[member] or 0) + change
    elseif change ~= 0 then
      add_window(j, member, string.format('%d', change))
    end
    if j == n and not given then
      given = sum - a - (left_slots[1] and left_behind(by, member) or 0)
    end
  end
  return contrib_code(contrib_change(cap, given, a))
end

-- Applies what contribute summed (see history), each sum made into text once a call
-- (string.format costs about what a short command does, and most members' sums in a
-- call are the same few numbers).
local function flush_contributions()
  local texts = {}
  local function text(v)
    local t = texts[v]
    if not t then
      t = string.format('%d', v)
      texts[v] = t
    end
    return t
  end
  for i, members in pairs(history) do
    local key = KEYS[STAGES + (i - 1) * n + 1] .. ':cm'
    for member, d in pairs(members) do
      if d ~= 0 then contrib_add(key, member, d, text(d)) end
    end
  end
  for j, members in pairs(changes or {}) do
    for member, change in pairs(members) do
      if change ~= 0 then add_window(j, member, text(change)) end
    end
  end
end

local status = { 1, 0 }
local e = 0
-- The usual call of a board that keeps contributors (one slot, one delta, no member
-- hashes) reads its entries itself: entry() is a Lua call, and a delta's text a number.
local usual, same_d = same and numbered == 0 and not hashes, same and same + 0
while true do
  for x = e, stop - 1 do
    local i, member, delta, h, by, d
    if usual then
      local at = first + stride * x
      i, member, delta, by, d = 1, ARGV[at], same, ARGV[at + 1], same_d
    else
      i, member, delta, h, by = entry(x)
      d = delta + 0
    end
    local k = stage[i]
    if k == n then
      status[x + 3] = 1
    elseif by and by ~= '' then
      status[x + 3] = contribute(i, k, member, d, by, delta)
    elseif unchecked or in_range(i, k, member, h, d) then
      apply(i, k, member, delta, h)
      applied_abs = applied_abs + math.abs(d)
      status[x + 3] = 0
    else
      status[x + 3] = 2
    end
  end
  e = stop
  if e >= count or spent() then break end
  stop = group_end(e)
end
flush_contributions()
if unchecked then
  redis.call('HINCRBY', board, 'abs_sum', applied_abs)
else
  redis.call('HSET', board, 'abs_sum', MAX)
end
save_geometries()
if fingerprint ~= '' then
  local recorded = { 1 }
  for x = 3, #status do recorded[x - 1] = status[x] end
  remember(recorded, e < count and e or nil)
end
status[2] = took()
return answered(status)
