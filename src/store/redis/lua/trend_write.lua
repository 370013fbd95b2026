-- trend_write.lua: add events to a trending board, each delta forward-decayed to the
-- record's landmark (and, while a rescale runs, to its new landmark in the next set too).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stored values  trend_{b}       (zset, member -> -Σ delta·2^((at − landmark)/h))
-- KEYS[3]  rescale build  trend_{b}_next  (the same for rs_landmark)
--
-- ARGV[1]  expected board version
-- ARGV[2]  the most half-lives an event may be after the landmark
-- ARGV[3k], ARGV[3k+1], ARGV[3k+2], k = 1..n   member, delta (integer), at (unix ms)
--
-- Values are stored negated, so the ascending order of the zset is the ranking (highest
-- score first, ties by member ascending) and ranked members are those below 0. The
-- scale is computed here from the record, so a write never uses a landmark a rescale
-- has just moved. Floats go to ZINCRBY with 17 significant digits (exact).
-- Returns the number of events applied. Refuses with STALE (board gone or re-created) or
-- RESCALE (an event further than ARGV[2] half-lives from the landmark: the caller
-- rescales, then sends the call again); a refusal applies nothing.

local record = board_record(KEYS[1], ARGV[1], 'landmark', 'half_life', 'rs_landmark')
local landmark = tonumber(record[3])
local h = tonumber(record[4]) * 1000
local next_landmark = record[5] and tonumber(record[5])
local limit = tonumber(ARGV[2]) * h
for a = 3, #ARGV, 3 do
  if tonumber(ARGV[a + 2]) - landmark > limit then
    refuse('RESCALE an event is too far from the landmark; rescale first')
  end
end
for a = 3, #ARGV, 3 do
  local member, delta, at = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  redis.call('ZINCRBY', KEYS[2], string.format('%.17g', -delta * 2 ^ ((at - landmark) / h)), member)
  if next_landmark then
    redis.call('ZINCRBY', KEYS[3],
      string.format('%.17g', -delta * 2 ^ ((at - next_landmark) / h)), member)
  end
end
return (#ARGV - 2) / 3
