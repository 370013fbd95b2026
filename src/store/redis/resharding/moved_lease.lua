-- moved_lease.lua: take or renew the lease of a reshard of a sharded board (on shard 0),
-- so two runs never move the same member at once. Kept in the stashes' hash under the
-- field '' (no member): '<holder> <until ms>'.
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stashes        moving_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the holder
-- ARGV[3]  now, unix ms (the caller's clock, as every lease here)
-- ARGV[4]  until when the lease is asked for, unix ms
--
-- Returns 1 when taken or renewed, 0 when another holder's lease runs past now. Error
-- "STALE ..." as write.lua.

board_record(KEYS[1], ARGV[1])
local held = redis.call('HGET', KEYS[2], '')
if held then
  local holder, until_ms = string.match(held, '^(.*) (%d+)$')
  if holder ~= ARGV[2] and tonumber(until_ms) > tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[2], '', ARGV[2] .. ' ' .. ARGV[4])
return 1
