-- contrib_hold.lua: hold (quarantine) a contributor on one board, or release it, one
-- chunk at a time (lua/contributors.lua): while held, what its events admitted counts in
-- no member's total; released, what of it is still inside the windows counts again.
--
-- KEYS[1]                board record      board_{b}
-- KEYS[1+j], j = 1..n    totals of window j, smallest first
-- then, on a dense board only, per window j: its tally and distinct totals
-- KEYS[#KEYS]            member data       data_{b}
--
-- ARGV[1]  board version the caller expects (with the caller's now and cause, see
--          board_record)
-- ARGV[2]  the contributor
-- ARGV[3]  'q' to hold it, 'r' to release it
-- ARGV[4]  HSCAN cursor of the contributor's hash ('0' to start)
-- ARGV[5]  time budget of this call, microseconds (as contrib_retract.lua's)
-- ARGV[5+j], j = 1..n  the windows, seconds
--
-- The first call (cursor '0') sets the contributor's flag 'q' to ARGV[3] (the record's
-- ctr_q counts the contributors with a flag), so from then on every write, retirement,
-- removal and retraction keeps a pair's sum in the field it has and puts a new one where
-- this walk moves them (contrib_sum_field). Each call then moves, in HSCAN steps of 20,
-- every counted sum '<W>\n<member>' to its held field '!<W>\n<member>' taking its counted
-- part out of the member's total in W (holding), or back (releasing). A field is moved
-- whole in one call, so a walk cut short and started again, or two at once, moves each
-- once; no field of the kind it moves is made while its flag stands, so once the scan
-- is over none is left. A walk whose flag was turned the other way since its first
-- call stops (the other walk moves everything back). A release's last call deletes
-- the flag. Returns {cursor, sums moved} ('done' when the walk is over).
-- Error "STALE ..." as in write.lua.

local board, by, hold = KEYS[1], ARGV[2], ARGV[3] == 'q'
local record = board_record(board, ARGV[1], 'per_contributor_member')
local cap = tonumber(record[3])
local n = #ARGV - 5
local ctr = board .. ':ctr:' .. by
local position = {}
for j = 1, n do position[ARGV[5 + j]] = j end

if ARGV[4] == '0' then
  if redis.call('HSET', ctr, 'q', ARGV[3]) == 1 then
    unquiet(board)
    redis.call('HINCRBY', board, 'ctr_q', 1)
  end
elseif redis.call('HGET', ctr, 'q') ~= ARGV[3] then
  -- A walk the other way started since: it moves the fields from now on.
  return { 'done', 0 }
end

local moved = 0
local cursor = contrib_walk(ctr, ARGV[4], hold and '[0-9]*' or '!*', tonumber(ARGV[5]),
  function(field, value)
    local w, member = string.match(field, '^!?(%d+)\n(.*)$')
    local j = position[w]
    if not j then return end
    redis.call('HDEL', ctr, field)
    redis.call('HSET', ctr, hold and ('!' .. field) or string.sub(field, 2), value)
    local part = contrib_capped(cap, tonumber(value))
    contrib_total(n, j, member, hold and -part or part)
    moved = moved + 1
  end)
if moved > 0 then
  gate(board)
  record_changes(board, hold and 'quarantine' or 'release')
end
if cursor ~= '0' then return { cursor, moved } end
if not hold and redis.call('HGET', ctr, 'q') == 'r' then
  redis.call('HDEL', ctr, 'q')
  if redis.call('HINCRBY', board, 'ctr_q', -1) <= 0 then redis.call('HDEL', board, 'ctr_q') end
end
return { 'done', moved }
