-- base.lua: the server's clock, refusals, the board record's guard, a field set or
-- deleted, the recompute lease and negation, which every other file of this folder may use.

-- Microseconds since the epoch, by the server's clock.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- Milliseconds since the epoch, by the server's clock.
local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Refuses the call with an error reply whose first word says why (STALE, ORDER, ...).
local function refuse(reason)
  error(redis.error_reply(reason))
end

-- The board record's fields 'version', 'dropping', then `...` (so record[3] is the first
-- of `...`). Refuses with STALE when the record is missing, being dropped, or of another
-- version than `version`, the one the caller expects.
local function board_record(board, version, ...)
  local record = redis.call('HMGET', board, 'version', 'dropping', ...)
  if record[1] ~= version or record[2] then
    refuse('STALE board record missing, dropped or of another version')
  end
  return record
end

-- Sets `field` of the hash `key` to `value`, or deletes it when `value` is `none` (what
-- its absence means).
local function set_field(key, field, value, none)
  if value == none then return redis.call('HDEL', key, field) end
  return redis.call('HSET', key, field, value)
end

-- Whether a recompute's lease, ending at `until_ms` (a record's rb_until, or false),
-- still holds.
local function lease_held(until_ms)
  return until_ms ~= false and until_ms ~= nil and now_ms() < tonumber(until_ms)
end

-- `v`, an integer as a string, negated (as a string: Lua would print a large number in
-- floating-point notation, which HINCRBY and ZINCRBY refuse or round).
local function negate(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end
