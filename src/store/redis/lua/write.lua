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
-- then the events, in order: with one slot (m = 1) pairs member, delta; with several,
-- triples slot number i, member, delta. Deltas are non-zero integers.
--
-- First every window whose cutoff passed its watermark is frozen up to the cutoff
-- (wm:<W> := cutoff), so an event for a slot that left a window skips that window even
-- before retirement runs. An event's stage k is the number of windows that froze its
-- slot (a prefix, since watermarks never increase with the window). k = n is too late.
-- Otherwise the event goes to stage k+1 of its slot and to the totals of windows k+1..n;
-- a field or member whose value becomes exactly 0 is deleted.
--
-- Range: deltas, totals and slot values must stay inside +-(2^53 - 1). The record's field
-- abs_sum bounds every stored magnitude (each is a sum of accepted deltas):
--   fast path, while abs_sum + sum(|delta|) <= 2^53 - 1: no value can leave the range, so
--     nothing is checked. Events are summed per slot and member, and each hash and
--     totals set is updated in bulk: its current values read with one HMGET/ZMSCORE, the
--     new ones written with one HSET/ZADD (and HDEL/ZREM for zeros), per 1000 members.
--     All values are integers below 2^53, so Lua's doubles compute them exactly.
--     abs_sum grows by the sum of |summed delta|;
--   exact path, otherwise (or when abs_sum is missing): each event is checked against the
--     current values, in order, and applied alone; abs_sum is set to the limit, so the
--     board stays on this path.
-- Returns {0, slot number, ...} (fast path: every event applied except those of the listed
-- slots, which are too late), or {1, status, ...} (exact path: per event 0 applied, 1 too
-- late, 2 out of range); or an error "STALE ..." when the board record is missing, being
-- dropped or of another version.

local MAX = 9007199254740991
local BULK = 1000
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

local stage = {}
for i = 1, m do
  local ts = ARGV[3 + 2 * n + i]
  local s, k = tonumber(ts), 0
  for j = 1, n do
    if watermark[j] >= s then k = j end
  end
  stage[i] = k
  if k < n then
    redis.call('ZADD', index, 'NX', ts, ts)
  end
end

local first = 4 + 2 * n + m
local stride = (m == 1) and 2 or 3
local count = (#ARGV - first + 1) / stride

-- The slot number, member and delta of event e (0-based).
local function event(e)
  local at = first + stride * e
  if stride == 2 then return 1, ARGV[at], ARGV[at + 1] end
  return tonumber(ARGV[at]), ARGV[at + 1], ARGV[at + 2]
end

-- Adds sums[member] to each member of `members` in hash or zset `key`, in bulk.
local function bulk_add(key, is_zset, members, sums)
  for from = 1, #members, BULK do
    local names = {}
    for x = from, math.min(from + BULK - 1, #members) do
      if sums[members[x]] ~= 0 then names[#names + 1] = members[x] end
    end
    if #names > 0 then
      local current = redis.call(is_zset and 'ZMSCORE' or 'HMGET', key, unpack(names))
      local set, zero = {}, {}
      for x, name in ipairs(names) do
        local value = (tonumber(current[x]) or 0) + sums[name]
        if value == 0 then
          zero[#zero + 1] = name
        elseif is_zset then
          set[#set + 1] = string.format('%d', value)
          set[#set + 1] = name
        else
          set[#set + 1] = name
          set[#set + 1] = string.format('%d', value)
        end
      end
      if #set > 0 then redis.call(is_zset and 'ZADD' or 'HSET', key, unpack(set)) end
      if #zero > 0 then redis.call(is_zset and 'ZREM' or 'HDEL', key, unpack(zero)) end
    end
  end
end

-- Fast path: sum per slot and member, and per window and member.
local slot_sums, slot_members, too_late = {}, {}, {}
local batch_abs = 0
for e = 0, count - 1 do
  local i, member, delta = event(e)
  local d = tonumber(delta)
  batch_abs = batch_abs + math.abs(d)
  if stage[i] == n then
    too_late[i] = true
  else
    local sums = slot_sums[i]
    if not sums then
      sums = {}
      slot_sums[i], slot_members[i] = sums, {}
    end
    local sum = sums[member]
    if sum == nil then
      slot_members[i][#slot_members[i] + 1] = member
      sums[member] = d
    else
      sums[member] = sum + d
    end
  end
end

local bound = tonumber(record[3])
if bound and bound + batch_abs <= MAX then
  local window_sums, window_members = {}, {}
  for j = 1, n do window_sums[j], window_members[j] = {}, {} end
  local grown = 0
  for i, sums in pairs(slot_sums) do
    local k = stage[i]
    bulk_add(KEYS[2 + n + (i - 1) * n + k + 1], false, slot_members[i], sums)
    for _, member in ipairs(slot_members[i]) do
      local sum = sums[member]
      grown = grown + math.abs(sum)
      for j = k + 1, n do
        local totals = window_sums[j]
        if totals[member] == nil then
          window_members[j][#window_members[j] + 1] = member
          totals[member] = sum
        else
          totals[member] = totals[member] + sum
        end
      end
    end
  end
  for j = 1, n do
    bulk_add(KEYS[2 + j], true, window_members[j], window_sums[j])
  end
  if grown > 0 then
    redis.call('HINCRBY', board, 'abs_sum', grown)
  end
  local reply = { 0 }
  for i in pairs(too_late) do reply[#reply + 1] = i end
  return reply
end

-- Exact path: check every event against the current values, in order.
local status = { 1 }
for e = 0, count - 1 do
  local i, member, delta = event(e)
  local k, d = stage[i], tonumber(delta)
  if k == n then
    status[e + 2] = 1
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
      local target = KEYS[base + k + 1]
      if redis.call('HINCRBY', target, member, delta) == 0 then
        redis.call('HDEL', target, member)
      end
      for j = k + 1, n do
        if redis.call('ZINCRBY', KEYS[2 + j], delta, member) == '0' then
          redis.call('ZREM', KEYS[2 + j], member)
        end
      end
      status[e + 2] = 0
    else
      status[e + 2] = 2
    end
  end
end
redis.call('HSET', board, 'abs_sum', MAX)
return status
