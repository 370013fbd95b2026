-- trend_create.lua: create a trending board's record, or return the existing one.
--
-- KEYS[1]  board record   board_{b}
--
-- ARGV[1]  version of the new incarnation
-- ARGV[2]  half-life, seconds
-- ARGV[3]  prune floor (a float, written to round-trip)
-- ARGV[4]  max age of an event, seconds
-- ARGV[5]  creation time, unix milliseconds (also the first landmark)
--
-- The record of a trending board: version, kind = 'trending', half_life, floor, max_age,
-- created_ms, landmark (ms: stored values are scaled to it), and while a rescale runs
-- rs_landmark (the landmark it moves to) and rs_cursor (its ZSCAN cursor).
-- Returns {1, version, half_life, floor, max_age, created_ms} when created, {0, ...} with
-- the stored values when a trending board of that name exists (the caller compares the
-- configs), or {2} when a windowed board of that name exists.
-- Error "DROPPING ..." while an earlier incarnation is being dropped.
-- The registry of boards is a separate key, updated by the caller with its own command.

local board = KEYS[1]
local existing = redis.call('HMGET', board, 'version', 'kind', 'half_life', 'floor', 'max_age',
  'created_ms', 'dropping')
if existing[7] then
  return redis.error_reply('DROPPING the board is being dropped; retry when that finishes')
end
if existing[1] then
  if existing[2] ~= 'trending' then
    return { 2 }
  end
  return { 0, existing[1], existing[3], existing[4], existing[5], existing[6] }
end
redis.call('HSET', board, 'version', ARGV[1], 'kind', 'trending', 'half_life', ARGV[2],
  'floor', ARGV[3], 'max_age', ARGV[4], 'created_ms', ARGV[5], 'landmark', ARGV[5])
return { 1, ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5] }
