-- write.lua: apply a batch of events to one board, in order, atomically.
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
-- before retirement runs. Then, per event, with k = the number of windows that froze its
-- slot (a prefix, since watermarks never increase with the window):
--   k = n                          -> status 1, too late
--   a total of windows k+1..n or the slot's value would leave +-(2^53 - 1)
--                                  -> status 2, out of range
--   otherwise HINCRBY stage k+1, ZINCRBY the totals of windows k+1..n (ZREM at exactly
--   zero), index the slot      -> status 0.
-- Returns one status per event, or an error "STALE ..." when the board record is missing,
-- being dropped, or of another version.

local MAX = 9007199254740991
local board, index = KEYS[1], KEYS[2]
local n, m = tonumber(ARGV[2]), tonumber(ARGV[3])

local fields = { 'version', 'dropping' }
for j = 1, n do fields[2 + j] = 'wm:' .. ARGV[3 + j] end
local record = redis.call('HMGET', board, unpack(fields))
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end

local watermark = {}
for j = 1, n do
  local wm, cutoff = tonumber(record[2 + j]), tonumber(ARGV[3 + n + j])
  if cutoff > wm then
    redis.call('HSET', board, fields[2 + j], ARGV[3 + n + j])
    wm = cutoff
  end
  watermark[j] = wm
end

local slot_ts, stage, indexed = {}, {}, {}
for i = 1, m do
  slot_ts[i] = ARGV[3 + 2 * n + i]
  local s, k = tonumber(slot_ts[i]), 0
  for j = 1, n do
    if watermark[j] >= s then k = j end
  end
  stage[i] = k
end

local status = {}
local first = 4 + 2 * n + m
for e = 0, (#ARGV - first + 1) / 3 - 1 do
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
    if not ok then
      status[e + 1] = 2
    else
      local target = KEYS[base + k + 1]
      if redis.call('HINCRBY', target, member, delta) == 0 then
        redis.call('HDEL', target, member)
      end
      if not indexed[i] then
        redis.call('ZADD', index, 'NX', slot_ts[i], slot_ts[i])
        indexed[i] = true
      end
      for j = k + 1, n do
        if tonumber(redis.call('ZINCRBY', KEYS[2 + j], delta, member)) == 0 then
          redis.call('ZREM', KEYS[2 + j], member)
        end
      end
      status[e + 1] = 0
    end
  end
end
return status
