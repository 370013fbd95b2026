-- contrib_hold.lua: hold (quarantine) a contributor on one board, or release it, one
-- chunk at a time (lua/contributors.lua): while held, what its events admitted counts in
-- no member's total; released, what of it is still inside the windows counts again.
--
-- KEYS[1]                board record      board_{b}
-- KEYS[2]                slot index        slots_{b}
-- KEYS[2+j], j = 1..n    totals of window j, smallest first
-- then, on a dense board only, per window j: its tally and distinct totals
-- KEYS[#KEYS]            member data       data_{b}
--
-- ARGV[1]  board version the caller expects (with the caller's now and cause, see
--          board_record)
-- ARGV[2]  the contributor
-- ARGV[3]  the prefix of the board's slot keys (as contrib_retract.lua's)
-- ARGV[4]  'q' to hold it, 'r' to release it
-- ARGV[5]  HSCAN cursor of the contributor's hash ('0' to start)
-- ARGV[6]  time budget of this call, microseconds (as contrib_retract.lua's)
-- ARGV[6+j], j = 1..n  the windows, seconds
--
-- The first call (cursor '0') sets the contributor's flag 'q' to ARGV[4] (the record's
-- ctr_q counts the contributors with a flag), so from then on every write, retirement,
-- removal and retraction keeps a pair's sum in the field it has and puts a new one where
-- this walk moves them (contrib_sum_field). Each call then moves, in HSCAN steps of 20,
-- every counted sum '<W>\n<member>' to its held field '!<W>\n<member>' taking its counted
-- part out of the member's total in W (holding), or back (releasing). Window 1 one slot
-- long keeps no counted sums (contrib_derived): a hold finds its pairs through the index
-- fields of the slots it has not retired and writes each sum, read from the stages, to
-- its held field, once; a release deletes that field. A field is moved
-- whole in one call, so a walk cut short and started again, or two at once, moves each
-- once; no field of the kind it moves is made while its flag stands, so once the scan
-- is over none is left. A walk whose flag was turned the other way since its first
-- call stops (the other walk moves everything back). A release's last call deletes
-- the flag. Returns {cursor, sums moved} ('done' when the walk is over).
-- Error "STALE ..." as in write.lua.

local board, by, prefix, mode = KEYS[1], ARGV[2], ARGV[3], ARGV[4]
local hold = mode == 'q'
local record = board_record(board, ARGV[1], 'per_contributor_member', 'slot',
  'done:' .. ARGV[7])
local cap = tonumber(record[3])
local n = #ARGV - 6
local ctr = board .. ':ctr:' .. by
local position = {}
for j = 1, n do position[ARGV[6 + j]] = j end
-- Window 1 one slot long: the slots it has not retired, and whether each is one.
local first_live, live = contrib_first_live(KEYS[2], record[4], ARGV[7], record[5]), {}
for _, s in ipairs(first_live or {}) do live[s] = true end

if ARGV[5] == '0' then
  if redis.call('HSET', ctr, 'q', mode) == 1 then
    unquiet(board)
    redis.call('HINCRBY', board, 'ctr_q', 1)
  end
elseif redis.call('HGET', ctr, 'q') ~= mode then
  -- A walk the other way started since: it moves the fields from now on.
  return { 'done', 0 }
end

local moved = 0
-- Holds the pair's sum in window 1 (one slot long) found through its index field in a
-- slot window 1 has not retired, unless held already.
local function hold_first(member)
  local held = '!' .. ARGV[7] .. '\n' .. member
  if redis.call('HEXISTS', ctr, held) == 1 then return end
  local sum = contrib_first_sum(prefix, first_live, by .. '\n' .. member)
  if sum == 0 then return end
  redis.call('HSET', ctr, held, string.format('%d', sum))
  contrib_total(n, 1, member, -contrib_capped(cap, sum))
  moved = moved + 1
end

local pattern = hold and (first_live and '[0-9@]*' or '[0-9]*') or '!*'
local cursor = contrib_walk(ctr, ARGV[5], pattern, tonumber(ARGV[6]),
  function(field, value)
    local slot, of = string.match(field, '^@(%d+)\n(.*)$')
    if slot then
      if live[slot] then hold_first(of) end
      return
    end
    local w, member = string.match(field, '^!?(%d+)\n(.*)$')
    local j = position[w]
    if not j then return end
    redis.call('HDEL', ctr, field)
    if j == 1 and first_live then
      -- Window 1 keeps no counted sums: one found is an earlier release's, and goes.
      if hold then return end
    else
      redis.call('HSET', ctr, hold and ('!' .. field) or string.sub(field, 2), value)
    end
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
