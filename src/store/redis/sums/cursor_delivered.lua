-- cursor_delivered.lua: a webhook's cursor of a board's stream (the id of the newest
-- entry delivered: the review webhook's of board_{b}:held, the changes webhook's of
-- board_{b}:changes), moved up first when given one.
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  the cursor     board_{b}:held_sent or board_{b}:changes_sent
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  an entry id ('<ms>-<seq>') delivered, or '' to read the cursor only
--
-- The cursor never moves back, so replicas delivering the same entries, or a re-sent
-- call, leave the newest. Returns the cursor, or false before the first delivery.
-- Error "STALE ..." when the board is missing, being dropped or of another version.

board_record(KEYS[1], ARGV[1])
local key = KEYS[2]
local current = redis.call('GET', key)
local function parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
if ARGV[2] ~= '' then
  local ms, seq = parts(ARGV[2])
  if not ms then return redis.error_reply('ERR cursor_delivered.lua: a bad entry id') end
  local at, n = 0, -1
  if current then at, n = parts(current) end
  if ms > at or (ms == at and seq > n) then
    redis.call('SET', key, ARGV[2])
    return ARGV[2]
  end
end
return current
