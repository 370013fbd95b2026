-- drop_begin.lua: mark a board as being dropped, so every write, read and retirement of
-- it fails from now on, and tell the caller which windows it had.
--
-- KEYS[1]  board record   board_{b}
--
-- Returns the windows (seconds, comma-separated), 'trending' for a trending board (no
-- windows: its keys are trend_{b} and trend_{b}_next), or false when there is no record.
-- The caller then deletes the slot hashes listed in the index (and compact slots'
-- buckets, from slotgeo_{b}), the totals, the geometries, the index and the record, in
-- that order; a dropper that dies half-way is finished by the next one.

local windows = redis.call('HGET', KEYS[1], 'windows')
if not windows then
  if redis.call('HGET', KEYS[1], 'kind') ~= 'trending' then
    return false
  end
  windows = 'trending'
end
unquiet(KEYS[1])
redis.call('HSET', KEYS[1], 'dropping', '1')
return windows
