-- contributors.lua: a board's contributors (a board with per_contributor_member, see
-- docs/design.md, "Contributors"): the keys, the cap and one event's contribution.
--
-- Keys, beside the board's own (same hash tag):
--   <stage>:c               a slot stage's contributions (beside slot_{b}_<ts>[_<k>]):
--                           field '<by>\n<member>' -> the sum of that pair's deltas in
--                           the stage (by has no control character, so the first \n
--                           splits it); staged as the member values are, retired with them
--   <stage 1>:cm            the slot's contributions per member, all stages (its history)
--   board_{b}:ctr:<by>      a contributor's sums: field '<W>\n<member>' -> the sum of its
--                           deltas to the member inside window W
--   board_{b}:ctrs          the contributors (zset, score: the newest slot they gave in)
-- A window's total for a member holds, per contributor, its sum there clamped to +-cap,
-- and the member's events without a contributor in full (in the slot stages).

-- `sum` clamped to +-`cap`.
local function contrib_capped(cap, sum)
  if sum > cap then return cap end
  if sum < -cap then return -cap end
  return sum
end

-- A contribution's status code in a write's reply: 3 + the zigzag of what it counted in
-- the largest window (0, -1, 1, -2 ... -> 3, 4, 5, 6 ...); 0, 1, 2 are write.lua's.
local function contrib_code(c)
  if c >= 0 then return 3 + 2 * c end
  return 2 - 2 * c
end

-- Adds `delta` (a number) to the sum of (`by`, `member`) in window `w` (seconds) kept in
-- the contributor's hash `ctr`, deleting it at 0; returns what that changes of the
-- member's counted part under `cap`.
local function contrib_window(ctr, w, member, delta, cap)
  local field = w .. '\n' .. member
  local new = redis.call('HINCRBY', ctr, field, delta)
  if new == 0 then redis.call('HDEL', ctr, field) end
  return contrib_capped(cap, new) - contrib_capped(cap, new - delta)
end

-- Adds `delta` to the pair (`by`, `member`) in the hash `key`, deleting it at 0.
local function contrib_pair(key, by, member, delta)
  local field = by .. '\n' .. member
  if redis.call('HINCRBY', key, field, delta) == 0 then redis.call('HDEL', key, field) end
end
