-- remove_member.lua: remove one member from some slots of a board, keeping totals exact.
--
-- KEYS[1]                  board record      board_{b}
-- KEYS[2]                  recompute build   rebuild_{b}
-- KEYS[3]                  recompute log     rebuild_log_{b}
-- KEYS[4]                  slot geometries   slotgeo_{b}
-- KEYS[4+j], j = 1..n      totals of window j, smallest first
-- KEYS[4+n+(i-1)*n+k]      stage k (1..n) of slot i (1..m), as in write.lua; on a
--                          compact slot the script deletes from the member's bucket
--                          `<stage key>:<i>` of each (same hash tag, so same node)
-- then, on a dense board only, per window j: its tally and distinct totals, then the
-- recompute build's (as in write.lua)
-- KEYS[#KEYS]              member data       data_{b}: the member's data goes when its
--                          total in the largest window reaches 0 (add_total)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  n, number of windows
-- ARGV[3]  the member
-- ARGV[4..3+n]  the windows, seconds (to find the one a recompute is building)
-- ARGV[3+n+i], i = 1..m  the start of slot i
--
-- A value in stage k of a slot is counted in the totals of windows k..n, so deleting it
-- subtracts it from exactly those totals (ZREM at exactly zero). A compact slot's
-- geometry is read per slot (a board may hold slots of both layouts); the member's
-- bucket is the same in every stage of a slot, and this call changes no geometry (its
-- `count`, an estimate that only decides splits, is left as it is). Called in batches of
-- slots; since every batch keeps totals equal to the slot data, concurrent writes and
-- retirements stay exact. A running recompute is told as by write.lua (a value of the
-- member being folded, in a slot its fold has summed, comes off rb_fold_sum).
-- Returns the number of stage values deleted. Error "STALE ..." as in write.lua.

local board = KEYS[1]
local n, member = tonumber(ARGV[2]), ARGV[3]
-- KEYS[GEOMETRY]; window j's totals at KEYS[TOTALS + j], slot stages after STAGES.
local GEOMETRY, TOTALS, STAGES = 4, 4, 4 + n
local record = board_record(board, ARGV[1], 'rb_window', 'rb_phase', 'rb_until',
  'rb_fold_member', 'rb_fold_slot')

-- The window being recomputed (its position), while its recompute holds the lease.
local rebuilt = nil
if record[3] and lease_held(record[5]) then
  for j = 1, n do
    if ARGV[3 + j] == record[3] then rebuilt = j end
  end
end

local m = #ARGV - 3 - n
local DENSE = STAGES + m * n
-- Per slot (1..m), the member's bucket on a compact slot, false on a plain one.
local buckets, hash = {}, nil
local geometries = {}
if m > 0 then
  geometries = redis.call('HMGET', KEYS[GEOMETRY], unpack(ARGV, 4 + n, 3 + n + m))
end
for i = 1, m do
  local geo = parse_geometry(geometries[i])
  if geo then
    hash = hash or member_hash(member)
    buckets[i] = bucket_of(geo, hash)
  else
    buckets[i] = false
  end
end
local dense_board = #KEYS > DENSE + 1 -- the last key is data_{b}
local data = KEYS[#KEYS]
local build_tally, build_dense = nil, nil
if dense_board then build_tally, build_dense = KEYS[DENSE + 2 * n + 1], KEYS[DENSE + 2 * n + 2] end

local deleted = 0
for key = STAGES + 1, DENSE do
  local k = (key - STAGES - 1) % n + 1
  local i = math.floor((key - STAGES - 1) / n) + 1
  -- A compact slot's stage is its member's bucket plus the plain hash an active relayout
  -- may leave beside it (docs/compact-slots.md, "Relayout"): both are removed.
  local forms = { KEYS[key] }
  if buckets[i] then forms[2] = bucket_key(KEYS[key], buckets[i]) end
  local found = false
  for _, stage in ipairs(forms) do
    local value = redis.call('HGET', stage, member)
    if value then
      redis.call('HDEL', stage, member)
      found = true
      for j = k, n do
        if dense_board then
          add_total(KEYS[TOTALS + j], member, negate(value), KEYS[DENSE + 2 * j - 1],
            KEYS[DENSE + 2 * j], j == n and data or nil)
        else
          add_total(KEYS[TOTALS + j], member, negate(value), nil, nil, j == n and data or nil)
        end
      end
      if rebuilt and k <= rebuilt then
        if record[4] == 'scan' then
          redis.call('SADD', KEYS[3], member)
        elseif redis.call('SISMEMBER', KEYS[3], member) == 0 then
          add_to(KEYS[2], member, negate(value), build_tally, build_dense)
        elseif member == record[6] then
          local slot = tonumber(ARGV[3 + n + i])
          if slot <= tonumber(record[7]) then
            redis.call('HINCRBY', board, 'rb_fold_sum', negate(value))
          end
        end
      end
    end
  end
  if found then deleted = deleted + 1 end
end
gate(board)
record_changes(board, 'remove')
return deleted
