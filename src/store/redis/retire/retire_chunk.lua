-- retire_chunk.lua: subtract one chunk of a frozen slot from one window's totals.
--
-- KEYS[1]  board record                    board_{b}
-- KEYS[2]  slot index                      slots_{b}
-- KEYS[3]  this window's totals            stats_{b} or stats_{b}_<W>
-- KEYS[4]  the slot's stage for this window, j: slot_{b}_<ts> (j = 1) or slot_{b}_<ts>_<j-1>
-- KEYS[5]  the slots' geometries           slotgeo_{b}
-- KEYS[6]  member data                     data_{b}: retiring the largest window deletes
--          the data of each member whose total it takes to 0 (bulk_add)
-- KEYS[7]  the slot's next stage, j+1:     slot_{b}_<ts>_<j>; absent for the largest window
-- then, on a dense board (ARGV[9] = 'dense'): this window's tally and distinct totals
--          (tally_{b}[_<W>], dense_{b}[_<W>]; see retally in the prelude)
-- A compact slot's buckets, <stage>:<i>, are named here from KEYS[4] and KEYS[7]: they
-- carry the same hash tag, so they live in the same Cluster slot.
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  this window, seconds (fields wm:<W>, done:<W>)
-- ARGV[3]  the next smaller window, seconds, or '' for the smallest window
-- ARGV[4]  the slot's start
-- ARGV[5]  cursor ('0' to start): a plain slot's HSCAN cursor; a compact slot's bucket
--          index, 'b<i>', or 'b<i>:<HSCAN cursor>' inside a bucket handled by HSCAN
--          steps, or 'p<HSCAN cursor>' / 'P<HSCAN cursor>' in its plain part (below).
--          A cursor of the other layout or order (an active relayout changed the slot
--          between two calls) starts over, which is always safe.
-- ARGV[6]  most fields to handle in this call
-- ARGV[7]  time budget of this call, microseconds
-- ARGV[8]  compact slots: a bucket over this many fields is handled by HSCAN steps
--          (4 x the buckets' fill: only late writes grow a bucket that far)
-- ARGV[9]  'dense' on a dense board, else absent
--
-- The stage is immutable once this window froze the slot and the smaller window
-- finished it, apart from the deletions done here. Every field handled is subtracted
-- from the totals (members reaching exactly 0 are removed), added to the next stage
-- (which the next window will subtract) and deleted from this stage, all in this one
-- call: a chunk is applied whole or not at all, so a retirer that dies, or two retirers
-- at once, never subtract a field twice nor skip one. Fields are handled in bulk: totals
-- read with one ZMSCORE and written with one ZADD and one ZREM. Values are integers
-- below 2^53, so Lua's doubles compute them exactly.
-- Plain slot (no geometry): HSCAN steps of about 50 fields over the stage hash; the next
-- stage is updated with one HMGET, HSET and HDEL per step.
-- Compact slot (a geometry in slotgeo_{b}): bucket by bucket from the cursor. A bucket is
-- read whole (HGETALL), subtracted, then moved to bucket i of the next stage by one
-- RENAME when that bucket does not exist, merged into it (HMGET, HSET, HDEL, then DEL)
-- when it does, or deleted for the largest window. A bucket over ARGV[8] fields (late
-- writes can grow one) is handled by HSCAN steps that delete as they go, like a plain
-- slot; its cursor is kept as 'b<i>:<HSCAN cursor>'. A call moves past bucket i
-- only once bucket i is gone, and no one adds to this stage, so reaching bucket N means
-- no bucket of this stage is left. A call starting from an older cursor (another
-- retirer, a re-sent call) finds the handled buckets gone and skips them.
-- Compact slot being converted by an active relayout (docs/compact-slots.md, "Relayout"): its
-- stage is its buckets plus its plain hash, and the converter only moves the old form
-- into the new one, so the old form is handled first and only shrinks meanwhile, and the
-- new form, handled after it, gets nothing once it is handled: without 'P' in the
-- geometry (compact, or being converted to compact) the plain part first, by HSCAN steps
-- as on a plain slot (handed on to the next stage's plain hash), then the buckets; with
-- 'P' (being converted to plain) the buckets first, then the plain part. Both parts end
-- with the ORDER checks above.
-- Either way the call stops after ARGV[6] fields, or before a step (an HSCAN step or a
-- bucket) that would likely overrun ARGV[7] microseconds (timed with TIME), so it stays
-- short on any machine and under any load (always at least one step): before any step
-- that would overrun at the pace of the slowest step so far, before a bucket read
-- whole whose fields (HLEN) would overrun at the call's measured time per field (a
-- bucket may hold up to ARGV[8] fields, 4x the others: the slowest step so far says
-- nothing of it), and, on a plain slot, before handling an HSCAN step whose fields
-- would (the next call scans again from the same cursor).
-- When the stage is empty the window is retired through this slot (done:<W>), and the
-- largest window also drops the slot from the index and its geometry.
-- Returns {cursor, fields subtracted, members zeroed}; cursor is 'done' when finished.
-- Errors: "STALE ...", "ORDER ..." (slot not frozen, the smaller window not finished, or
-- fields left after a full scan: something else is writing this stage), "RECOMPUTING ..."
-- while a recompute holds its lease (stage values must not move while it scans them).

local board, index, totals, stage, geo_key = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tally, dense = nil, nil
if ARGV[9] == 'dense' then tally, dense = KEYS[#KEYS - 1], KEYS[#KEYS] end
local next_stage = (#KEYS - (tally and 2 or 0) == 7) and KEYS[7] or nil
-- Only the largest window's totals (no next stage) hold the lifetime of member data.
local data = (not next_stage) and KEYS[6] or nil
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

-- Handles the fields of one HSCAN step of hash `from`, moving them to `to` (or nil):
-- returns how many, and how many members zeroed.
local function handle(found, from, to)
  local fields, values = fields_and_values(found)
  if #fields == 0 then return 0, 0 end
  local zeroed = bulk_add(totals, true, -1, fields, values, tally, dense, data)
  if to then bulk_add(to, false, 1, fields, values) end
  redis.call('HDEL', from, unpack(fields))
  gate(board)
  return #fields, zeroed
end

-- The stage is empty: this window is retired through the slot.
local function finish(subtracted, zeroed)
  if tonumber(record[4]) < slot then
    redis.call('HSET', board, done_field, ARGV[4])
  end
  if not next_stage then
    redis.call('ZREM', index, ARGV[4])
    redis.call('HDEL', geo_key, ARGV[4])
  end
  -- The slot left the window at slot + W: the changes of the whole retirement, which
  -- reads marked behind until now.
  record_changes(board, 'retire', nil, (slot + tonumber(ARGV[2])) * 1000)
  return { 'done', subtracted, zeroed }
end

local max_fields, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local step = math.min(50, max_fields)
local started = now_us()
local subtracted, zeroed = 0, 0
local elapsed, slowest = 0, 0
local geo = slot_geometry(geo_key, ARGV[4])

if geo then
  local n = bucket_count(geo)
  local big = tonumber(ARGV[8])
  -- Both forms of the stage, old form first (see the header): without 'P' the plain
  -- part ('p<HSCAN cursor>') then the buckets ('b<i>'); with 'P' the buckets, then the
  -- plain part ('P<HSCAN cursor>'). Any other cursor starts this order over.
  local mark = geo.to_plain and 'P' or 'p'
  local phase, i, sub, pc = nil, 0, nil, '0'
  local bi, bsub = string.match(ARGV[5], '^b(%d+):?(%d*)$')
  local pcur = string.match(ARGV[5], '^' .. mark .. '(%d+)$')
  if bi then
    phase, i = 'buckets', tonumber(bi)
    if bsub ~= '' then sub = bsub end
  elseif pcur then
    phase, pc = 'plain', pcur
  else
    phase = geo.to_plain and 'buckets' or 'plain'
  end
  while true do
    local before = elapsed
    if phase == 'plain' then
      local scan = redis.call('HSCAN', stage, pc, 'COUNT', step)
      local c, z = handle(scan[2], stage, next_stage)
      subtracted, zeroed, pc = subtracted + c, zeroed + z, scan[1]
      if pc == '0' then
        -- The chain started at 0 and deleted every field it saw: none is left, since no
        -- one adds to this form of a frozen stage (the converter moves the old form
        -- into the new one, handled after it).
        if redis.call('EXISTS', stage) == 1 then
          return redis.error_reply('ORDER stage hash ' .. stage .. ' still has fields after a full scan')
        end
        if geo.to_plain then return finish(subtracted, zeroed) end
        phase, i, sub = 'buckets', 0, nil
      end
    elseif i >= n then
      -- Every bucket is gone. Without 'P' the plain part was handled first; one left
      -- means the cursor came from an older call: go over it again.
      if not geo.to_plain and redis.call('EXISTS', stage) == 0 then
        return finish(subtracted, zeroed)
      end
      phase, pc = 'plain', '0'
    else
      local from = bucket_key(stage, i)
      local to = next_stage and bucket_key(next_stage, i) or nil
      local size = redis.call('HLEN', from)
      if size == 0 then
        i, sub = i + 1, nil
      elseif sub or size > big then
        local scan = redis.call('HSCAN', from, sub or '0', 'COUNT', step)
        local c, z = handle(scan[2], from, to)
        subtracted, zeroed = subtracted + c, zeroed + z
        if scan[1] ~= '0' then
          sub = scan[1]
        elseif redis.call('EXISTS', from) == 0 then
          i, sub = i + 1, nil
        else
          -- A scan chain starts at 0 and deletes every field it sees; the bucket is frozen.
          return redis.error_reply('ORDER bucket ' .. from .. ' still has fields after a full scan')
        end
      elseif subtracted > 0 and now_us() - started + size * elapsed / subtracted > budget then
        -- Read whole, this bucket would likely overrun the budget: the next call starts
        -- with it.
        break
      else
        local fields, values = fields_and_values(redis.call('HGETALL', from))
        zeroed = zeroed + bulk_add(totals, true, -1, fields, values, tally, dense, data)
        subtracted = subtracted + #fields
        hand_on(from, to, fields, values)
        i, sub = i + 1, nil
      end
    end
    elapsed = now_us() - started
    slowest = math.max(slowest, elapsed - before)
    -- Stop before a step that would likely overrun the budget.
    if subtracted >= max_fields or elapsed + slowest > budget then break end
  end
  if phase == 'plain' then return { mark .. pc, subtracted, zeroed } end
  local cursor = 'b' .. string.format('%d', i)
  if sub then cursor = cursor .. ':' .. sub end
  return { cursor, subtracted, zeroed }
end

-- A plain slot, or a compact one that another call finished for the largest window (its
-- geometry went with it): a bucket cursor then means nothing here, and the stage is gone.
if redis.call('EXISTS', stage) == 0 then
  return finish(subtracted, zeroed)
end
local cursor = ARGV[5]
if not string.match(cursor, '^%d+$') then cursor = '0' end
repeat
  local before = elapsed
  local scan = redis.call('HSCAN', stage, cursor, 'COUNT', step)
  -- A step answers ~50 fields, up to 2-3 times more while the hash is being resized
  -- (HSCAN then walks both tables): a step whose fields would likely overrun the
  -- budget at the call's measured time per field is left to the next call, which
  -- scans again from the same cursor (the stage is frozen: nothing is missed).
  if subtracted > 0 and now_us() - started + (#scan[2] / 2) * elapsed / subtracted > budget then
    break
  end
  local c, z = handle(scan[2], stage, next_stage)
  subtracted, zeroed, cursor = subtracted + c, zeroed + z, scan[1]
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
  -- Stop before a step that would likely overrun the budget.
until cursor == '0' or subtracted >= max_fields or elapsed + slowest > budget

if redis.call('EXISTS', stage) == 0 then
  return finish(subtracted, zeroed)
end
if cursor == '0' then
  -- A scan that started at cursor 0 has seen every field (the hash is frozen), and each
  -- field seen was deleted: fields left over mean something else writes this stage.
  return redis.error_reply('ORDER stage hash ' .. stage .. ' still has fields after a full scan')
end
return { cursor, subtracted, zeroed }
