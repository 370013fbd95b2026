-- retire_chunk.lua: subtract one chunk of a frozen slot from one window's totals.
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  slot index                      slots_{b}
-- KEYS[3]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[4]  the slot's stage for this window, j: slot_{b}_<ts> (j = 1) or slot_{b}_<ts>_<j-1>
-- KEYS[5]  the slot's next stage, j+1:     slot_{b}_<ts>_<j>; absent for the largest window
-- then, on a dense board (ARGV[8] = 'dense'): this window's tally and distinct totals
--          (tally_{b}[_<W>], dense_{b}[_<W>]; see retally in the prelude)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  HSCAN cursor ('0' to start)
-- ARGV[6]  most fields to handle in this call
-- ARGV[7]  time budget of this call, microseconds
-- ARGV[8]  'dense' on a dense board, else absent
--
-- The stage hash is immutable once this window froze the slot and the smaller window
-- finished it, apart from the deletions done here. Each field returned by HSCAN is
-- subtracted from the totals (members reaching exactly 0 are removed), added to the next
-- stage (which the next window will subtract) and deleted, all in this one call: a chunk
-- is applied whole or not at all, so a retirer that dies, or two retirers at once, never
-- subtract a field twice nor skip one. The chunk's fields are handled in bulk: totals read
-- with one ZMSCORE and written with one ZADD and one ZREM, the next stage with one HMGET,
-- HSET and HDEL. Values are integers below 2^53, so Lua's doubles compute them exactly.
-- The call works through HSCAN steps of about 50 fields and stops after ARGV[6] fields,
-- or before a step that would likely overrun ARGV[7] microseconds (timed with TIME), so
-- it stays short on any machine and under any load (always at least one step).
-- When the stage hash is empty the window is retired through this slot (done:<W>), and
-- the largest window also drops the slot from the index.
-- Returns {cursor, fields subtracted, members zeroed}; cursor is 'done' when finished.
-- Errors: "STALE ...", "ORDER ..." (slot not frozen, the smaller window not finished, or
-- fields left after a full scan: something else is writing this stage), "RECOMPUTING ..."
-- while a recompute holds its lease (stage values must not move while it scans them).

local board, index, totals, stage = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tally, dense = nil, nil
if ARGV[8] == 'dense' then tally, dense = KEYS[#KEYS - 1], KEYS[#KEYS] end
local next_stage = (#KEYS - (tally and 2 or 0) == 5) and KEYS[5] or nil
local done_field = 'done:' .. ARGV[2]
local prev_field = ARGV[3] ~= '' and ('done:' .. ARGV[3]) or 'version'
local record = board_record(board, ARGV[1], 'wm:' .. ARGV[2], done_field, prev_field, 'rb_until')
if lease_held(record[6]) then
  return redis.error_reply('RECOMPUTING the board is being recomputed; retirement waits')
end
local slot = tonumber(ARGV[4])
if tonumber(record[3]) < slot then
  return redis.error_reply('ORDER slot ' .. ARGV[4] .. ' is not frozen for window ' .. ARGV[2])
end
if ARGV[3] ~= '' and tonumber(record[5]) < slot then
  return redis.error_reply('ORDER the smaller window has not retired slot ' .. ARGV[4])
end

-- Handles the fields of one HSCAN step; returns how many, and how many members zeroed.
local function handle(found)
  local fields, values, seen = {}, {}, {}
  for p = 1, #found, 2 do
    local field = found[p]
    -- HSCAN may return a field twice; handle it once.
    if not seen[field] then
      seen[field] = true
      fields[#fields + 1] = field
      values[#values + 1] = tonumber(found[p + 1])
    end
  end
  if #fields == 0 then return 0, 0 end

  -- Adds sign * values[x] to each field in hash or zset `key`, in bulk; returns how many
  -- members reached exactly 0.
  local function bulk_add(key, is_zset, sign)
    local current = redis.call(is_zset and 'ZMSCORE' or 'HMGET', key, unpack(fields))
    local set, zero = {}, {}
    for x = 1, #fields do
      local value = (tonumber(current[x]) or 0) + sign * values[x]
      if is_zset and tally then retally(tally, dense, current[x], value) end
      if value == 0 then
        zero[#zero + 1] = fields[x]
      elseif is_zset then
        set[#set + 1] = string.format('%d', value)
        set[#set + 1] = fields[x]
      else
        set[#set + 1] = fields[x]
        set[#set + 1] = string.format('%d', value)
      end
    end
    if #set > 0 then redis.call(is_zset and 'ZADD' or 'HSET', key, unpack(set)) end
    if #zero > 0 then redis.call(is_zset and 'ZREM' or 'HDEL', key, unpack(zero)) end
    return #zero
  end

  local zeroed = bulk_add(totals, true, -1)
  if next_stage then
    bulk_add(next_stage, false, 1)
  end
  redis.call('HDEL', stage, unpack(fields))
  return #fields, zeroed
end

local max_fields, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local step = math.min(50, max_fields)
local started = now_us()
local cursor, subtracted, zeroed = ARGV[5], 0, 0
local elapsed, slowest = 0, 0
repeat
  local before = elapsed
  local scan = redis.call('HSCAN', stage, cursor, 'COUNT', step)
  local n, z = handle(scan[2])
  subtracted, zeroed, cursor = subtracted + n, zeroed + z, scan[1]
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
  -- Stop before a step that would likely overrun the budget.
until cursor == '0' or subtracted >= max_fields or elapsed + slowest > budget

if redis.call('EXISTS', stage) == 0 then
  if tonumber(record[4]) < slot then
    redis.call('HSET', board, done_field, ARGV[4])
  end
  if not next_stage then
    redis.call('ZREM', index, ARGV[4])
  end
  return { 'done', subtracted, zeroed }
end
if cursor == '0' then
  -- A scan that started at cursor 0 has seen every field (the hash is frozen), and each
  -- field seen was deleted: fields left over mean something else writes this stage.
  return redis.error_reply('ORDER stage hash ' .. stage .. ' still has fields after a full scan')
end
return { cursor, subtracted, zeroed }
