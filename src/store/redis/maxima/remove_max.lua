-- remove_max.lua: remove one member from a max, min or latest board (docs/design.md,
-- "Removing a member from a max, min or latest board"), in two steps.
--
-- KEYS[1]  board record   board_{b}
-- ARGV[1]  board version the caller expects
-- ARGV[2]  'begin' or 'clean'
-- ARGV[3]  the member
--
-- begin: KEYS[2] the records (peaks_{b} or newest_{b}), KEYS[3] member data data_{b},
--   KEYS[3+j] window j's values (j = 1..n, ARGV[4] = n), then on a dense board per
--   window its tally and distinct values. Deletes the member's record, its value in
--   every window (retallied) and its data, and notes the removal in the record:
--   rm_member, rm_next (every live slot before it is clean of the member's values: none
--   yet) and rm_written (slots at or after rm_next that writes cleaned, see below);
--   a gated board then applies its gate (gate).
--   Answers {'begun'}, or {'pending', member, rm_next} when another member's removal is
--   pending (its caller died, or runs now): the caller finishes that one first (clean
--   steps are safe to run twice) and begins again; {'begun'} too when this member's own
--   removal is pending (the caller goes on with it from rm_next, answered third).
-- clean: KEYS[2] slot geometries slotgeo_{b}, KEYS[2+i] slot i's hash (i = 1..m; a
--   compact slot's member's bucket too). ARGV[4] rm_next as the caller read it,
--   ARGV[5] the next one after these slots ('end': they are the last live ones), ARGV[5+i]
--   slot i's start, ascending, each at or after ARGV[4]. Deletes the member from each
--   slot not in rm_written, moves rm_next on (at 'end' the removal's state goes).
--   Answers {'ok', values deleted}, {'at', rm_next} when the removal is elsewhere (another
--   caller moved it: go on from there) or {'none'} when no removal of the member is
--   pending (finished by another caller).
--
-- While a removal is pending, write_max.lua, before merging an event of the member into
-- a slot at or after rm_next and not in rm_written, deletes the member's value there (a
-- value from before the removal) and adds the slot to rm_written: so every value of the
-- member in a live slot is either from before the removal, in a slot still to clean, or
-- from after it, and its record and window values are those of the values after it
-- (begin deleted them, writes merged from nothing). Retirement re-evaluates a member from
-- its record, so a value to clean in a retiring slot changes nothing. A recompute waits
-- (recompute_begin.lua answers REMOVING; the caller finishes the removal first), and a
-- removal waits for a recompute (RECOMPUTING).
-- Errors: "STALE ..." as write.lua; "RECOMPUTING ..." (begin) while a recompute holds the
-- board's lease.

local board, member = KEYS[1], ARGV[3]
local record = board_record(board, ARGV[1], 'rm_member', 'rm_next', 'rm_written', 'rb_until')
local MIN_SLOT = '-9007199254740991'

if ARGV[2] == 'begin' then
  if lease_held(record[6]) then
    return redis.error_reply('RECOMPUTING the board is being recomputed; remove the member after')
  end
  if record[3] and record[3] ~= member then return { 'pending', record[3], record[4] } end
  if record[3] == member then return { 'begun', record[4] } end
  local records, data, n = KEYS[2], KEYS[3], tonumber(ARGV[4])
  redis.call('HDEL', records, member)
  redis.call('HDEL', data, member)
  for j = 1, n do
    local totals = KEYS[3 + j]
    if KEYS[3 + n + 2 * j] then
      retally_all(KEYS[3 + n + 2 * j - 1], KEYS[3 + n + 2 * j], redis.call('ZSCORE', totals, member), nil)
    end
    redis.call('ZREM', totals, member)
    if hidden_members then redis.call('ZREM', totals .. ':hidden', member) end
  end
  unquiet(board)
  redis.call('HSET', board, 'rm_member', member, 'rm_next', MIN_SLOT, 'rm_written', '')
  if review_rank then gate_changed[member] = true end
  gate(board)
  return { 'begun', MIN_SLOT }
end

-- clean
if record[3] ~= member then return { 'none' } end
if record[4] ~= ARGV[4] then return { 'at', record[4] } end
local written = {}
for s in string.gmatch(record[5] or '', '[^,]+') do written[s] = true end
local deleted = 0
local m = #KEYS - 2
local geometries = m > 0 and redis.call('HMGET', KEYS[2], unpack(ARGV, 6, 5 + m)) or {}
for i = 1, m do
  local slot = ARGV[5 + i]
  if not written[slot] then
    local geo = parse_geometry(geometries[i])
    local gone = redis.call('HDEL', KEYS[2 + i], member)
    if geo then gone = gone + redis.call('HDEL', held_key(KEYS[2 + i], geo, member), member) end
    if gone > 0 then deleted = deleted + 1 end
  end
end
if ARGV[5] == 'end' then
  redis.call('HDEL', board, 'rm_member', 'rm_next', 'rm_written')
else
  local kept = {}
  for s in pairs(written) do
    if tonumber(s) >= tonumber(ARGV[5]) then kept[#kept + 1] = s end
  end
  redis.call('HSET', board, 'rm_next', ARGV[5], 'rm_written', table.concat(kept, ','))
end
return { 'ok', deleted }
