-- trend_prune.lua: remove up to a chunk of members whose score has decayed below the
-- board's floor in magnitude (|score| < floor at now).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stored values  trend_{b}
--
-- ARGV[1]  expected board version
-- ARGV[2]  now, unix milliseconds
-- ARGV[3]  most members removed by this call
--
-- The floor is turned into the stored scale (floor · 2^((now − landmark)/h)) and the
-- members strictly inside (−bound, bound) are removed. Skipped while a rescale runs (its
-- build must keep every member the stored values hold).
-- Returns how many members were removed, or -1 while a rescale runs.

local record = board_record(KEYS[1], ARGV[1], 'landmark', 'half_life', 'floor', 'rs_landmark')
if record[6] then
  return -1
end
local h = tonumber(record[4]) * 1000
local bound = tonumber(record[5]) * 2 ^ ((tonumber(ARGV[2]) - tonumber(record[3])) / h)
local b = string.format('%.17g', bound)
local below = redis.call('ZRANGEBYSCORE', KEYS[2], '(-' .. b, '(' .. b, 'LIMIT', 0, ARGV[3])
if #below > 0 then
  redis.call('ZREM', KEYS[2], unpack(below))
end
return #below
