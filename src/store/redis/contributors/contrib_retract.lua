-- contrib_retract.lua: take back one chunk of a contributor's contributions to one board
-- (lua/contributors.lua), found through its index, from every window and what the caps
-- counted, as if its events had never been written.
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
-- ARGV[3]  the prefix of the board's slot keys ('slot_{b}_': stage k of slot s is
--          <prefix><s> for k = 1, <prefix><s>_<k-1> above)
-- ARGV[4]  the first slot to take back (slots starting before it keep theirs), or ''
--          for every slot
-- ARGV[5]  HSCAN cursor of the contributor's hash ('0' to start)
-- ARGV[6]  time budget of this call, microseconds: it stops before an HSCAN step that
--          would likely overrun it at the pace of its slowest step so far
-- ARGV[6+j], j = 1..n  the windows, seconds
--
-- Each index field of board_{b}:ctr:<by> names a slot and a member ('@<slot>\n<member>')
-- or the slot's use of the budget ('@<slot>'). For a pair, the stages k of the slot are
-- read from the first until as many fields were found as the index counts (the refused
-- part's only on a board with a budget): each admitted part leaves the contributor's
-- sums of windows k..n (which count stage k) and the member's totals there what that
-- changes of its counted part, all of the pair's parts in one read and one write of
-- its sums (the changes of one window add up: each is clamp(after) - clamp(before); on
-- window 1 one slot long, the sum is read from the stages, contrib_derived); the
-- slot's history drops by both kinds of part. For the
-- budget, the slot's use leaves u. The stage fields and the index field go in the same
-- call: a field is handled whole or not at all, so a retraction cut short, repeated or
-- run twice at once takes each contribution back exactly once. Writes, retirement and
-- removal keep the index (contrib_index), so this call costs what the contributor
-- gave, never the board's size. A contribution written while the scan runs may be
-- missed (HSCAN sees what is there throughout); run it again to take it back.
-- Returns {cursor, pairs taken back, events} ('done' when the scan is over; events: the
-- sum of the |parts| taken back).
-- Error "STALE ..." as in write.lua.

local board, by = KEYS[1], ARGV[2]
local record = board_record(board, ARGV[1], 'per_contributor_member', 'ctr_q', 'per_contributor',
  'slot', 'done:' .. ARGV[7])
local cap, budget = tonumber(record[3]), record[5]
local prefix, since = ARGV[3], tonumber(ARGV[4])
local n = #ARGV - 6
local ctr = board .. ':ctr:' .. by
local flag = contrib_flag(ctr, record[4])
-- Window 1 one slot long: the slots it has not retired.
local first_live = contrib_first_live(KEYS[2], record[6], ARGV[7], record[7])

-- Stage k of slot `slot`'s contributions.
local function stage_of(slot, k)
  return prefix .. slot .. (k > 1 and ('_' .. (k - 1)) or '') .. ':c'
end

-- The call's scratch tables, emptied per pair (each table made costs Redis as much as a
-- command): per window j the admitted parts taken out, the fields read of a
-- stage (then those found, to delete) and of the contributor's sums, and the
-- contributor's fields to delete and to set.
local admitted, read, fields, windows, gone, kept = {}, {}, {}, {}, {}, {}

-- Takes the pair (by, member)'s admitted parts (per window j, in `admitted`) out of the
-- contributor's sums, moving the member's totals by what that changes of its counted
-- parts; the fields it empties go to `gone` (after its first `ng`): returns their count.
-- `before1`: the pair's sum in window 1 before, when window 1 keeps no counted sums and
-- a part leaves it.
local function leave_admitted(member, ng, before1)
  local from = 1
  if before1 then
    from = 2
    contrib_total(n, 1, member, (contrib_first(ctr, ARGV[7], member, before1, -admitted[1],
      cap, flag)))
  end
  if flag then
    for j = from, n do
      local part = admitted[j]
      if part ~= 0 then
        contrib_total(n, j, member, (contrib_window(ctr, ARGV[6 + j], member, -part, cap, flag)))
      end
    end
    return ng
  end
  local nf, nk = 0, 0
  for j = from, n do
    if admitted[j] ~= 0 then
      nf = nf + 1
      windows[nf], fields[nf] = j, ARGV[6 + j] .. '\n' .. member
    end
  end
  if nf == 0 then return ng end
  local values = redis.call('HMGET', ctr, unpack(fields, 1, nf))
  for x = 1, nf do
    local j = windows[x]
    local old = tonumber(values[x]) or 0
    local new = old - admitted[j]
    contrib_total(n, j, member, contrib_change(cap, old, new - old))
    if new == 0 then
      ng = ng + 1
      gone[ng] = fields[x]
    else
      kept[nk + 1], kept[nk + 2] = fields[x], string.format('%d', new)
      nk = nk + 2
    end
  end
  if nk > 0 then redis.call('HSET', ctr, unpack(kept, 1, nk)) end
  return ng
end

-- Takes back the pair's parts in the stages of `slot` (`count` stage fields, the index
-- says); the contributor's fields it empties go to `gone` after its first: returns the
-- sum of the |parts| and how many fields `gone` holds.
local function take_pair(slot, member, count)
  local pair, events, history, found = by .. '\n' .. member, 0, 0, 0
  for j = 1, n do admitted[j] = 0 end
  local nr = budget and 2 or 1
  read[1], read[2] = pair, budget and '\n' .. pair or nil
  for k = 1, n do
    if found >= count then break end
    local key = stage_of(slot, k)
    local parts = redis.call('HMGET', key, unpack(read, 1, nr))
    local hits = 0
    for x = 1, nr do
      local part = tonumber(parts[x])
      if part then
        if x == 1 then
          for j = k, n do admitted[j] = admitted[j] + part end
        end
        hits = hits + 1
        read[2 + hits] = read[x]
        events, history = events + math.abs(part), history + part
      end
    end
    if hits > 0 then redis.call('HDEL', key, unpack(read, 3, 2 + hits)) end
    found = found + hits
  end
  local before1 = nil
  if first_live and admitted[1] ~= 0 then
    before1 = contrib_first_sum(prefix, first_live, pair) + admitted[1]
  end
  local ng = leave_admitted(member, 1, before1)
  if history ~= 0 then contrib_add(stage_of(slot, 1) .. 'm', member, -history) end
  return events, ng
end

local handled, events, touched = 0, 0, false
local cursor = contrib_walk(ctr, ARGV[5], '@*', tonumber(ARGV[6]), function(field, count)
  local slot, member = string.match(field, '^@(%d+)\n?(.*)$')
  if not slot or (since and tonumber(slot) < since) then return end
  gone[1] = field
  local ng = 1
  if member ~= '' then
    local taken
    taken, ng = take_pair(slot, member, tonumber(count) or 2 * n)
    events, handled = events + taken, handled + 1
  else
    local key = stage_of(slot, n)
    local used = tonumber(redis.call('HGET', key, by))
    if used then
      contrib_add(ctr, 'u', -used)
      redis.call('HDEL', key, by)
    end
  end
  redis.call('HDEL', ctr, unpack(gone, 1, ng))
  touched = true
end)
if touched then
  gate(board)
  record_changes(board, 'retract')
end
if cursor ~= '0' then return { cursor, handled, events } end
return { 'done', handled, events }
