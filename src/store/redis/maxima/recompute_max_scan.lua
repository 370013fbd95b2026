-- recompute_max_scan.lua: one step of a max, min or latest board's recompute
-- (docs/design.md, "Recompute of max, min and latest boards"): the next HSCAN step of
-- one live slot's hash, merged into the build's records, and each member it returned
-- set in the build of the window from its build record.
--
-- KEYS[1]  board record                 board_{b}
-- KEYS[2]  the slot's hash              slot_{b}_<ts>: member -> its highest value there
--          (a latest board: '<at>:<value>' of its newest event there)
-- KEYS[3]  the build's records          rebuild_records_{b}: peak lists (a max board) or
--          newest events (a latest board), as peaks_{b} / newest_{b}
-- KEYS[4]  the build of the window      rebuild_{b}
-- KEYS[5]  slot geometries              slotgeo_{b}: a compact slot's buckets
-- KEYS[6], KEYS[7]  on a dense board only: the build's tally and distinct values
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token (recompute_begin.lua)
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  the slot's start
-- ARGV[5]  the cursor to go on from ('0': the start; the prelude's slot_scan: the plain
--          hash, then a compact slot's buckets)
-- ARGV[6]  HSCAN COUNT
-- ARGV[7]  the window, seconds (its watermark wm:<W>)
-- ARGV[8]  'max' or 'latest'
--
-- Each value of the step is merged into the member's build record (peaks_add,
-- newest_add: a maximum, so merging it twice, or in any order, leaves what merging it
-- once does), and the member's value in the build of the window becomes what its build
-- record says for the slots the window has not frozen (past wm:<W>), or it leaves the
-- build. Writes while the recompute holds its lease merge their events into the build's
-- records and window as they do into the live ones (write_max.lua), and retirement
-- waits (retire_*.lua answer RECOMPUTING): once every live slot is scanned, the build
-- holds what the live slots hold, and recompute_max_swap.lua puts it in place. A step
-- sent again (a lost reply) merges the same values again: no change.
-- Returns {next cursor ('0' when the hash is scanned), members handled}.
-- Errors: "STALE ..." as write.lua; "LOST ..." when the recompute's lease expired or
-- was taken over.

local board, slot_key, records, build = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'wm:' .. ARGV[7])
local now = now_ms()
if record[3] ~= ARGV[2] or now >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', now + tonumber(ARGV[3]))
local latest = ARGV[8] == 'latest'
local after = latest and newest_after or peaks_after
local watermark = tonumber(record[5])

local flat, next_cursor = slot_scan(slot_key, slot_geometry(KEYS[5], ARGV[4]), ARGV[5],
  tonumber(ARGV[6]))
-- A member in both forms (the retirer moving it meanwhile): both values are merged.
local members, held = {}, {}
for x = 1, #flat, 2 do
  if held[flat[x]] == nil then members[#members + 1] = flat[x] end
  held[flat[x]] = better_held(held[flat[x]], flat[x + 1], latest)
end
if #members > 0 then
  local stored = redis.call('HMGET', records, unpack(members))
  local write, set, gone = {}, {}, {}
  for i, member in ipairs(members) do
    local list, new = stored[i], nil
    if latest then
      local at, value = string.match(held[member], '^(%-?%d+):(%-?%d+)$')
      new = newest_add(list, ARGV[4], value, at)
    else
      new = peaks_add(list, ARGV[4], held[member])
    end
    if new then
      list = new
      write[#write + 1] = member
      write[#write + 1] = new
    end
    set_or_gone(set, gone, member, after(list, watermark))
  end
  if #write > 0 then redis.call('HSET', records, unpack(write)) end
  if KEYS[6] then retally_step(KEYS[6], KEYS[7], build, members, set) end
  if #set > 0 then redis.call('ZADD', build, unpack(set)) end
  if #gone > 0 then redis.call('ZREM', build, unpack(gone)) end
end
return { next_cursor, #members }
