-- recompute_scan.lua: add one stage hash's values to a recompute's build, in steps.
--
-- KEYS[1]  board record      board_{b}
-- KEYS[2]  build             rebuild_{b}
-- KEYS[3]  a stage hash of a live slot counted by the window being rebuilt
-- KEYS[4]  scan progress     rebuild_scan_{b}: field = stage hash, value = the HSCAN
--          cursor its scan reached ('done' when scanned)
-- KEYS[5], KEYS[6]  dense boards only: the build's tally and distinct totals
--          (rebuild_tally_{b}, rebuild_dense_{b}; see retally in the prelude)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the recompute's token
-- ARGV[3]  lease, milliseconds (extended by this call)
-- ARGV[4]  HSCAN cursor ('0' to start): where the caller believes the scan is
-- ARGV[5]  most fields to add in this call
-- ARGV[6]  time budget of this call, microseconds
--
-- Adds the values of HSCAN steps of about 50 fields to the build (one ZMSCORE, one ZADD
-- and one ZREM per step; values are integers below 2^53, exact in Lua's doubles) until
-- the scan ends, ARGV[5] fields are added, or the next step would likely overrun the
-- budget, and records the cursor reached in the same call. The hash is read, not changed.
-- Never twice:
--   - a call whose cursor is not the one recorded (it was sent again after its reply was
--     lost, and the first sending ran) adds nothing and answers the recorded cursor, so
--     the caller goes on from there: each call's effect is a function of the state;
--   - a field HSCAN returns twice within the call is added once;
--   - across calls HSCAN returns a field twice only when the hash's table shrank between
--     them, which takes deletions of most of its fields: retirement, the one source of
--     mass deletions, waits while the recompute holds its lease (see recompute_begin.lua).
-- Returns {cursor, fields added}; cursor is 'done' when the hash is scanned.
-- Errors: "STALE ..."; "LOST ..." when the recompute's lease expired or was taken over.

local board, build, stage, progress = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local tally, dense = KEYS[5], KEYS[6]
local record = board_record(board, ARGV[1], 'rb_token', 'rb_until', 'rb_phase')
local started = now_us()
if record[3] ~= ARGV[2] or record[5] ~= 'scan' or started / 1000 >= tonumber(record[4]) then
  return redis.error_reply('LOST the recompute lost its lease; run it again')
end
redis.call('HSET', board, 'rb_until', math.floor(started / 1000) + tonumber(ARGV[3]))

local reached = redis.call('HGET', progress, stage) or '0'
if reached ~= ARGV[4] then
  return { reached, 0 }
end

local max_fields, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local cursor, added, elapsed, slowest = ARGV[4], 0, 0, 0
local seen = {}
repeat
  local before = elapsed
  local scan = redis.call('HSCAN', stage, cursor, 'COUNT', 50)
  local found = scan[2]
  cursor = scan[1]
  local names, values = {}, {}
  for p = 1, #found, 2 do
    local name = found[p]
    if not seen[name] then
      seen[name] = true
      names[#names + 1] = name
      values[#values + 1] = tonumber(found[p + 1])
    end
  end
  if #names > 0 then
    local current = redis.call('ZMSCORE', build, unpack(names))
    local set, zero = {}, {}
    for x = 1, #names do
      local value = (tonumber(current[x]) or 0) + values[x]
      if tally then retally(tally, dense, current[x], value) end
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
  cursor = 'done'
end
redis.call('HSET', progress, stage, cursor)
return { cursor, added }
