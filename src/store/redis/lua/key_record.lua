-- key_record.lua: the records of calls made under an idempotency key.

-- Idempotency-key records (write.lua, trend_write.lua). A call under a client's key is
-- recorded, in the same call that applies its write, as one string set with PX = TTL:
--   '<fingerprint>[:<events>] <now> <deadline>[ <reply>...]'
-- <fingerprint>: what the write carried (40 hex digits); <events>: how many events the
-- call applied (absent: the whole call, as in trend_write.lua's records and in
-- write.lua's from before counts were kept); <now>: the caller's now and <deadline>:
-- now + TTL, unix ms; <reply>: numbers saying what the call answered (write.lua's only).
-- Every record written so far has this form (write.lua's '<fp>:<events> ...' and older
-- '<fp> ...', trend_write.lua's '<fp> <now> <deadline>'), and trend_write.lua still
-- writes no count, so processes of either version read each other's records.

-- The live record at `key` (its deadline after `now`, unix ms): nil when there is none
-- (or only one past its deadline, as good as absent: Redis deletes it at its PX), false
-- when it records another fingerprint, else {recorded now, events (-1 when not kept),
-- reply...}, as numbers.
local function key_record(key, fingerprint, now)
  local stored = redis.call('GET', key)
  if not stored then return nil end
  local parts = {}
  for part in string.gmatch(stored, '%S+') do parts[#parts + 1] = part end
  if tonumber(parts[3]) <= tonumber(now) then return nil end
  local recorded, events = string.match(parts[1], '^([^:]*):?(%d*)$')
  if recorded ~= fingerprint then return false end
  -- The replay's caller may wait for replicas, and WAIT counts the writes of its own
  -- connection: the record's expiry written again, unchanged (time stands still in a
  -- script), replicates after the first call's writes, so the wait covers them.
  local ttl = redis.call('PTTL', key)
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) end
  local found = { tonumber(parts[2]), tonumber(events) or -1 }
  for x = 4, #parts do found[#found + 1] = tonumber(parts[x]) end
  return found
end

-- Records a call under `key` (see above): `events` may be nil (no count), `reply` nil or
-- a list; `now`, `deadline` and `ttl_ms` as the caller sent them.
local function set_key_record(key, fingerprint, events, now, deadline, ttl_ms, reply)
  local value = fingerprint .. (events and (':' .. events) or '') .. ' ' .. now .. ' ' .. deadline
  if reply and #reply > 0 then value = value .. ' ' .. table.concat(reply, ' ') end
  redis.call('SET', key, value, 'PX', ttl_ms)
end
