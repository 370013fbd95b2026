-- recompute_scan.lua: add one stage hash's values to a recompute's build, in steps.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  a stage hash of a live slot counted by the window being rebuilt
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  HSCAN cursor ('0' to start)
-- ARGV[5]  most fields to add in this call
-- ARGV[6]  time budget of this call, microseconds
--
-- Adds the values of HSCAN steps of about 50 fields to the build (one ZMSCORE, one ZADD
-- and one ZREM per step; values are integers below 2^53, exact in Lua's doubles) until
-- the scan ends, ARGV[5] fields are added, or the next step would likely overrun the
-- budget. The hash is read, not changed. HSCAN returns an element twice only when a
-- table shrinks, which needs mass deletions: retirement, the one source of those, waits
-- while the recompute holds its lease (see recompute_begin.lua).
-- Returns {cursor, fields added}; cursor is 'done' when the hash is scanned.
-- Errors: "STALE ..."; "LOST ..." when the recompute's lease expired or was taken over.

local board, build, stage = KEYS[1], KEYS[2], KEYS[3]
local record = redis.call('HMGET', board, 'version', 'dropping', 'rb_token', 'rb_until', 'rb_phase')
if record[1] ~= ARGV[1] or record[2] then
  return redis.error_reply('STALE board record missing, dropped or of another version')
end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local started = now_us()
if record[3] ~= ARGV[2] or record[5] ~= 'scan' or started / 1000 >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', math.floor(started / 1000) + tonumber(ARGV[3]))

local max_fields, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local cursor, added, elapsed, slowest = ARGV[4], 0, 0, 0
repeat
  local before = elapsed
  local scan = redis.call('HSCAN', stage, cursor, 'COUNT', 50)
  local found = scan[2]
  cursor = scan[1]
  if #found > 0 then
    local names, values = {}, {}
    for p = 1, #found, 2 do
      names[#names + 1] = found[p]
      values[#values + 1] = tonumber(found[p + 1])
    end
    local current = redis.call('ZMSCORE', build, unpack(names))
    local set, zero = {}, {}
    for x = 1, #names do
      local value = (tonumber(current[x]) or 0) + values[x]
      if value == 0 then
        zero[#zero + 1] = names[x]
      else
        set[#set + 1] = string.format('%d', value)
        set[#set + 1] = names[x]
      end
    end
    if #set > 0 then redis.call('ZADD', build, unpack(set)) end
    if #zero > 0 then redis.call('ZREM', build, unpack(zero)) end
    added = added + #names
  end
  elapsed = now_us() - started
  slowest = math.max(slowest, elapsed - before)
until cursor == '0' or added >= max_fields or elapsed + slowest > budget

if cursor == '0' then
  return { 'done', added }
end
return { cursor, added }
