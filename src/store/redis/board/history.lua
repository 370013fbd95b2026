-- history.lua: a member's value in each live slot of a range of slots, read in one
-- atomic call. Writes nothing.
--
-- KEYS[1]                  board record    board_{b}
-- KEYS[2]                  slot index      slots_{b}
-- KEYS[3]                  slot geometries slotgeo_{b}
-- KEYS[3+(i-1)*n+k]        stage k-1 (k = 1..n) of passed slot i (i = 1..m):
--                          slot_{b}_<ts>, slot_{b}_<ts>_1, ..., slot_{b}_<ts>_<n-1>;
--                          on a compact slot the script reads the member's bucket
--                          `<stage key>:<i>` of each (same hash tag, so same node)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the range's lower bound, inclusive: a slot start
-- ARGV[3]  the range's upper bound: '(<slot start>' (exclusive) or '+inf'
-- ARGV[4]  the member
-- ARGV[5]  n, stages per slot (the board's number of windows); '<n> max' on a max
--          board, whose slot keeps the member's highest value in stage 0 alone, or
--          '<n> latest' on a latest board, whose slot keeps '<at>:<value>' of the
--          member's newest event there: a slot is listed when the member holds a value
--          there, 0 included; '<n> contributors' on a sum board that keeps them, whose
--          slot's value also holds the member's contributions (<stage 1>:cm)
-- ARGV[6]  most slots to list when answering 'slots'
-- ARGV[6+i], i = 1..m   the passed slots' starts (m = #ARGV - 6)
--
-- A slot's value is the sum of its stages. Retirement moves a value from stage k to
-- stage k+1 of the same slot, one chunk per call: summing every stage of a slot inside
-- one call never counts a moved value twice nor misses it. The slots are found in the
-- index, whose keys cannot be named in advance (Cluster), so the caller passes the stage
-- keys of the slots it listed; when the index holds a live slot in the range that was
-- not passed, the call answers the live slots from the lower bound on (at most ARGV[6])
-- and the caller calls again with those. The caller splits a long history into ranges
-- of a bounded number of stage keys, so each call stays short; a slot lies in exactly
-- one range.
--
-- Returns {'points', newest, slot, value, slot, value, ...} for each live slot of the
-- range whose value is not 0 (a compact slot: the sum of the member's bucket of every
-- stage, by the slot's geometry, which no call changes while this one runs, and of the
-- plain stage hashes an active relayout may leave beside them), or
-- {'slots', newest, slot, slot, ...}; newest is the newest live slot (false when none). Error "STALE ..." when the board record is
-- missing, being dropped or of another version.

local board, index = KEYS[1], KEYS[2]
board_record(board, ARGV[1])
local newest = redis.call('ZREVRANGEBYSCORE', index, '+inf', '-inf', 'LIMIT', 0, 1)[1] or false

local n, m = tonumber(string.match(ARGV[5], '^%d+')), #ARGV - 6
local latest = string.find(ARGV[5], 'latest', 1, true)
local values = latest or string.find(ARGV[5], 'max', 1, true)
local contributions = string.find(ARGV[5], 'contributors', 1, true)
local passed = {}
for i = 1, m do passed[ARGV[6 + i]] = i end
local live = redis.call('ZRANGEBYSCORE', index, ARGV[2], ARGV[3], 'LIMIT', 0, m + 1)
for _, slot in ipairs(live) do
  if not passed[slot] then
    local reply = { 'slots', newest }
    for _, s in ipairs(redis.call('ZRANGEBYSCORE', index, ARGV[2], '+inf', 'LIMIT', 0, tonumber(ARGV[6]))) do
      reply[#reply + 1] = s
    end
    return reply
  end
end

local reply = { 'points', newest }
local hash = nil
-- Every live slot's geometry in one read (false: plain).
local geometries = (#live > 0) and redis.call('HMGET', KEYS[3], unpack(live)) or {}
for x, slot in ipairs(live) do
  local first = 3 + (passed[slot] - 1) * n
  local geo = parse_geometry(geometries[x])
  local bucket = nil
  if geo then
    hash = hash or member_hash(ARGV[4])
    bucket = bucket_of(geo, hash)
  end
  local value, held = 0, false
  if values then
    held = held_value(KEYS[first + 1], geo, ARGV[4], latest)
    if held and latest then held = string.match(held, ':(%-?%d+)$') end
    value = tonumber(held) or 0
  else
    for k = 1, n do
      value = value + stage_value(KEYS[first + k], bucket, ARGV[4])
    end
    if contributions then
      value = value + (tonumber(redis.call('HGET', KEYS[first + 1] .. ':cm', ARGV[4])) or 0)
    end
  end
  if value ~= 0 or held then
    reply[#reply + 1] = slot
    reply[#reply + 1] = value
  end
end
return reply
