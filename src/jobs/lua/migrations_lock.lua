-- migrations_lock.lua: refresh or release the lock `rollboard migrate` holds while it
-- applies migrations, only if this holder still has it (it is taken with SET NX PX).
--
-- KEYS[1]  the lock, rollboard:migrations:lock (a string: the holder's token)
-- ARGV[1]  'refresh' or 'release'
-- ARGV[2]  the holder's token
-- ARGV[3]  with 'refresh': the new time to live, milliseconds
--
-- Returns 1 when the caller held the lock (now refreshed or released), 0 when it did not
-- (it expired and perhaps another process took it).

if redis.call('GET', KEYS[1]) ~= ARGV[2] then
  return 0
end
if ARGV[1] == 'release' then
  redis.call('DEL', KEYS[1])
else
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
