-- relayout.lua: set the layout of a board's slots created from now on, and count its
-- live slots by layout.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  slot index        slots_{b}
-- KEYS[3]  slot geometries   slotgeo_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the layout: 'plain' or 'compact' (field layout)
--
-- A slot's layout is fixed when write.lua creates it: from the record's `layout` when
-- set. So once this call has set it, every slot created after it gets the new layout,
-- and every live slot keeps the one it has (a compact slot is one with a geometry):
-- every script reads a slot's layout per slot, so the board stays exact while writes,
-- reads, retirement, removal and recompute go on. Live slots are counted in HMGETs of
-- 1000 (a board has as many live slots as its largest window holds slots).
-- Returns {live slots, live compact slots} (a slot an active relayout is converting to
-- plain, its geometry marked 'P', counts as plain).
-- Error "STALE ..." when the board record is missing, being dropped or of another version.

local board, index, geometries = KEYS[1], KEYS[2], KEYS[3]
board_record(board, ARGV[1])
redis.call('HSET', board, 'layout', ARGV[2])
local live = redis.call('ZRANGE', index, 0, -1)
local compact = 0
for from = 1, #live, 1000 do
  local found = redis.call('HMGET', geometries, unpack(live, from, math.min(from + 999, #live)))
  for _, text in ipairs(found) do
    local geometry = parse_geometry(text)
    if geometry and not geometry.to_plain then compact = compact + 1 end
  end
end
return { #live, compact }
