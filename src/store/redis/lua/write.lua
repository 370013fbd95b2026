-- write.lua: apply a batch of events to one board, atomically.
--
-- KEYS[1]                    board record      board_{b}
-- KEYS[2]                    slot index        slots_{b}
-- KEYS[2+j], j = 1..n        totals of window j (stats_{b}, stats_{b}_<W>), smallest first
-- KEYS[2+n+(i-1)*n+k]        stage k (1..n) of distinct slot i (1..m):
--                            k = 1 is slot_{b}_<ts>, k > 1 is slot_{b}_<ts>_<k-1>
--
-- ARGV[1]                    board version the caller expects
-- ARGV[2]                    n, number of windows
-- ARGV[3]                    m, number of distinct slots in this batch
-- ARGV[3+j], j = 1..n        window j in seconds (names the field wm:<W>)
-- ARGV[3+n+j], j = 1..n      cutoff of window j at the caller's now: slot_start(now) - W
-- ARGV[3+2n+i], i = 1..m     start of distinct slot i
-- then one triple per event: slot number i, member, delta (a non-zero integer)
--
-- First every window whose cutoff passed its watermark is frozen up to the cutoff
-- (wm:<W> := cutoff), so an event for a slot that left a window skips that window even
-- before retirement runs. An event's stage k is the number of windows that froze its
-- slot (a prefix, since watermarks never increase with the window). k = n is too late.
-- Otherwise the event goes to stage k+1 of its slot and to the totals of windows k+1..n
-- (a field or member reaching exactly 0 is deleted).
--
-- Range: deltas, totals and slot values must stay inside +-(2^53 - 1). The record's
-- field abs_sum bounds every stored magnitude (each is a sum of accepted deltas):
--   fast path, while abs_sum + sum(|delta|) <= 2^53 - 1: no value can leave the range, so
--     no checks are needed; events of the same slot and member are summed and applied
--     once, and abs_sum grows by the sum of |summed delta|;
--   exact path, otherwise (or when abs_sum is missing): each event is checked against the
--     current values in order, and abs_sum is set to the limit, so the board stays exact.
-- Returns one status per event: 0 applied, 1 too late, 2 out of range; or an error
-- "STALE ..." when the board record is missing, being dropped or of another version.

local MAX = 9007199254740991
local board, index = KEYS[1], KEYS[2]
local n, m = tonumber(ARGV[2]), tonumber(ARGV[3])

local fields = { 'version', 'dropping', 'abs_sum' }
for j = 1, n do fields[3 + j] = 'wm:' .. ARGV[3 + j] end
local record = redis.call('HMGET', board, unpack(fields))
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end

local watermark = {}
for j = 1, n do
  local wm, cutoff = tonumber(record[3 + j]), tonumber(ARGV[3 + n + j])
  if cutoff > wm then
    redis.call('HSET', board, fields[3 + j], ARGV[3 + n + j])
    wm = cutoff
  end
  watermark[j] = wm
end

local slot_ts, stage = {}, {}
for i = 1, m do
  slot_ts[i] = ARGV[3 + 2 * n + i]
  local s, k = tonumber(slot_ts[i]), 0
  for j = 1, n do
    if watermark[j] >= s then k = j end
  end
  stage[i] = k
  if k < n then
    redis.call('ZADD', index, 'NX', slot_ts[i], slot_ts[i])
  end
end

local first = 4 + 2 * n + m
local count = (#ARGV - first + 1) / 3

-- Adds delta to stage k+1 of slot i and to the totals of windows k+1..n.
local function apply(i, member, delta)
  local k = stage[i]
  local target = KEYS[2 + n + (i - 1) * n + k + 1]
  if redis.call('HINCRBY', target, member, delta) == 0 then
    redis.call('HDEL', target, member)
  end
  for j = k + 1, n do
    if tonumber(redis.call('ZINCRBY', KEYS[2 + j], delta, member)) == 0 then
      redis.call('ZREM', KEYS[2 + j], member)
    end
  end
end

local status = {}
local bound = tonumber(record[3])
local batch_abs = 0
if bound then
  for e = 0, count - 1 do
    batch_abs = batch_abs + math.abs(tonumber(ARGV[first + 3 * e + 2]))
  end
end

if bound and bound + batch_abs <= MAX then
  -- Fast path: sum the events of each (slot, member), apply each sum once.
  local sums, order = {}, {}
  for e = 0, count - 1 do
    local i = tonumber(ARGV[first + 3 * e])
    if stage[i] == n then
      status[e + 1] = 1
    else
      status[e + 1] = 0
      local key = i .. ':' .. ARGV[first + 3 * e + 1]
      local sum = sums[key]
      if sum == nil then
        order[#order + 1] = { i, ARGV[first + 3 * e + 1], key }
        sums[key] = tonumber(ARGV[first + 3 * e + 2])
      else
        sums[key] = sum + tonumber(ARGV[first + 3 * e + 2])
      end
    end
  end
  local grown = 0
  for _, entry in ipairs(order) do
    local sum = sums[entry[3]]
    if sum ~= 0 then
      apply(entry[1], entry[2], string.format('%d', sum))
      grown = grown + math.abs(sum)
    end
  end
  if grown > 0 then
    redis.call('HINCRBY', board, 'abs_sum', grown)
  end
  return status
end

-- Exact path: check every event against the current values, in order.
for e = 0, count - 1 do
  local i = tonumber(ARGV[first + 3 * e])
  local member, delta = ARGV[first + 3 * e + 1], ARGV[first + 3 * e + 2]
  local k, d = stage[i], tonumber(delta)
  if k == n then
    status[e + 1] = 1
  else
    local base = 2 + n + (i - 1) * n
    -- Stages above k+1 cannot hold anything yet: the slot's value is stages 1..k+1.
    local value = 0
    for st = 1, k + 1 do
      value = value + (tonumber(redis.call('HGET', KEYS[base + st], member)) or 0)
    end
    local ok = math.abs(value + d) <= MAX
    for j = k + 1, n do
      if not ok then break end
      local total = tonumber(redis.call('ZSCORE', KEYS[2 + j], member)) or 0
      ok = math.abs(total + d) <= MAX
    end
    if ok then
      apply(i, member, delta)
      status[e + 1] = 0
    else
      status[e + 1] = 2
    end
  end
end
redis.call('HSET', board, 'abs_sum', MAX)
return status
