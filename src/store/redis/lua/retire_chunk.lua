-- retire_chunk.lua: subtract one chunk of a frozen slot from one window's totals.
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  slot index                      slots_{b}
-- KEYS[3]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[4]  the slot's stage for this window, j: slot_{b}_<ts> (j = 1) or slot_{b}_<ts>_<j-1>
-- KEYS[5]  the slot's next stage, j+1:     slot_{b}_<ts>_<j>; absent for the largest window
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  HSCAN cursor ('0' to start)
-- ARGV[6]  HSCAN COUNT: about how many fields to handle in this call
--
-- The stage hash is immutable once this window froze the slot and the smaller window
-- finished it, apart from the deletions done here. Each field returned by HSCAN is
-- subtracted from the totals (ZREM when the total is exactly 0), added to the next stage
-- (which the next window will subtract) and deleted, all in this one call: a chunk is
-- applied whole or not at all, so a retirer that dies, or two retirers at once, never
-- subtract a field twice nor skip one. When the stage hash is empty the window is retired
-- through this slot (done:<W>), and the largest window also drops the slot from the index.
-- Returns {cursor, fields subtracted, members zeroed}; cursor is 'done' when finished.
-- Errors: "STALE ...", "ORDER ..." (slot not frozen, the smaller window not finished, or
-- fields left after a full scan: something else is writing this stage).

local board, index, totals, stage, next_stage = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local done_field = 'done:' .. ARGV[2]
local prev_field = ARGV[3] ~= '' and ('done:' .. ARGV[3]) or 'version'
local record = redis.call('HMGET', board, 'version', 'dropping', 'wm:' .. ARGV[2], done_field, prev_field)
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end
local slot = tonumber(ARGV[4])
if tonumber(record[3]) < slot then
  return redis.error_reply('ORDER slot ' .. ARGV[4] .. ' is not frozen for window ' .. ARGV[2])
end
if ARGV[3] ~= '' and tonumber(record[5]) < slot then
  return redis.error_reply('ORDER the smaller window has not retired slot ' .. ARGV[4])
end

local function negate(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end

local scan = redis.call('HSCAN', stage, ARGV[5], 'COUNT', ARGV[6])
local pairs_, seen, handled = scan[2], {}, {}
local subtracted, zeroed = 0, 0
for p = 1, #pairs_, 2 do
  local field, value = pairs_[p], pairs_[p + 1]
  if not seen[field] then
    seen[field] = true
    handled[#handled + 1] = field
    subtracted = subtracted + 1
    if tonumber(redis.call('ZINCRBY', totals, negate(value), field)) == 0 then
      redis.call('ZREM', totals, field)
      zeroed = zeroed + 1
    end
    if next_stage and redis.call('HINCRBY', next_stage, field, value) == 0 then
      redis.call('HDEL', next_stage, field)
    end
  end
end
for first = 1, #handled, 1000 do
  redis.call('HDEL', stage, unpack(handled, first, math.min(first + 999, #handled)))
end

if redis.call('EXISTS', stage) == 0 then
  if tonumber(record[4]) < slot then
    redis.call('HSET', board, done_field, ARGV[4])
  end
  if not next_stage then
    redis.call('ZREM', index, ARGV[4])
  end
  return { 'done', subtracted, zeroed }
end
if scan[1] == '0' then
  -- A scan that started at cursor 0 has seen every field (the hash is frozen), and each
  -- field seen was deleted: fields left over mean something else writes this stage.
  return redis.error_reply('ORDER stage hash ' .. stage .. ' still has fields after a full scan')
end
return { scan[1], subtracted, zeroed }
