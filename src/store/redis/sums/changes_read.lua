-- changes_read.lua: a page of a board's changes (lua/watch.lua). Writes nothing.
--
-- KEYS[1]  the changes           board_{b}:changes
-- KEYS[2]  the watched tops       board_{b}:watch (field 'trimmed': the newest id
--          trimmed, see record_changes)
--
-- ARGV[1]  the id to read after, '<ms>-<n>', or '' to read from the oldest kept
-- ARGV[2]  most changes to answer
-- ARGV[3]  '1': read the other way, the newest before ARGV[1] ('': from the newest),
--          newest first
--
-- Returns {0, entries} (XRANGE's reply: id, then field, value, ...), or {1} when a change
-- after ARGV[1] was trimmed (the newest id trimmed is after it): the reader missed
-- changes and must start over. Read newest first, never {1}.

local log, after = KEYS[1], ARGV[1]
if ARGV[3] == '1' then
  return { 0, redis.call('XREVRANGE', log, after == '' and '+' or '(' .. after, '-', 'COUNT', ARGV[2]) }
end
local trimmed = after ~= '' and redis.call('HGET', KEYS[2], 'trimmed')
if trimmed then
  local t_ms, t_n = string.match(trimmed, '^(%d+)-(%d+)$')
  local a_ms, a_n = string.match(after, '^(%d+)-(%d+)$')
  t_ms, t_n, a_ms, a_n = tonumber(t_ms), tonumber(t_n), tonumber(a_ms), tonumber(a_n)
  if a_ms < t_ms or (a_ms == t_ms and a_n < t_n) then return { 1 } end
end
return { 0, redis.call('XRANGE', log, after == '' and '-' or '(' .. after, '+', 'COUNT', ARGV[2]) }
