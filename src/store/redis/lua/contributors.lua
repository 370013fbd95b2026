-- contributors.lua: a board's contributors (a board with per_contributor_member or
-- per_contributor, see docs/design.md, "Contributors"): the keys, the cap and one
-- event's contribution.
--
-- Keys, beside the board's own (same hash tag):
--   <stage>:c               a slot stage's contributions (beside slot_{b}_<ts>[_<k>]):
--                           field '<by>\n<member>' -> the sum of what the budget admitted
--                           of that pair's deltas in the stage (all of them without a
--                           budget; by has no control character, so the first \n splits
--                           it), '\n<by>\n<member>' -> the sum of what it refused (kept
--                           here only: no total counts it, the views sum it); staged
--                           as the member values are, retired with them; and in the
--                           slot's last stage (n) '<by>' -> what by's admitted likes in
--                           the slot use of the budget, given back when the largest
--                           window retires the slot
--   <stage 1>:cm            the slot's contributions per member, all stages (its history)
--   board_{b}:ctr:<by>      a contributor's sums: field '<W>\n<member>' -> the sum of what
--                           was admitted of its deltas to the member inside window W
--                           (none for window 1 one slot long, contrib_derived); 'u' ->
--                           what its admitted likes use of the budget in the slots the
--                           largest window has not retired; and its index, for
--                           retraction: per slot '@<slot>\n<member>' -> how many stage
--                           fields of the slot hold the pair's parts, '@<slot>' -> 1
--                           while the slot holds its use of the budget (each deleted at
--                           0); while the contributor is held (quarantined,
--                           contrib_hold.lua), 'q' -> 'q' (held, or being held) or 'r'
--                           (being released), and each admitted sum a member's total
--                           does not count is kept as '!<W>\n<member>' instead
--                           (contrib_sum_field)
-- A window's total for a member holds, per contributor, its admitted sum there clamped
-- to +-cap, and the member's events without a contributor in full (in the slot stages).
-- A drop finds a board's contributors in its live slots' stage contributions: a
-- contributor's hash holds nothing once no live stage holds a part of it (a quarantined
-- one's flag aside: the drop reads those from the quarantined set).

-- `sum` clamped to +-`cap` (nil: no cap).
local function contrib_capped(cap, sum)
  if not cap then return sum end
  if sum > cap then return cap end
  if sum < -cap then return -cap end
  return sum
end

-- What adding `delta` to a sum of `before` changes of its part clamped to +-`cap` (nil:
-- no cap): contrib_capped of both, written out, since it runs for every capped like and
-- window (a Lua function call costs Redis some hundreds of instructions).
local function contrib_change(cap, before, delta)
  if not cap then return delta end
  local after = before + delta
  after = after > cap and cap or (after < -cap and -cap or after)
  return after - (before > cap and cap or (before < -cap and -cap or before))
end

-- A contribution's status code in a write's reply: 3 + the zigzag of what it counted in
-- the largest window (0, -1, 1, -2 ... -> 3, 4, 5, 6 ...); 0, 1, 2 are write.lua's.
local function contrib_code(c)
  if c >= 0 then return 3 + 2 * c end
  return 2 - 2 * c
end

-- A stage's contributions field (see the header): its contributor, its member and whether
-- it holds a refused part ('\n<by>\n<member>'); the member is nil for '<by>', what by's
-- admitted likes in the slot use of the budget.
local function contrib_field(field)
  local refused = string.byte(field, 1) == 10
  local rest = refused and string.sub(field, 2) or field
  local at = string.find(rest, '\n', 1, true)
  if not at then return rest, nil, false end
  return string.sub(rest, 1, at - 1), string.sub(rest, at + 1), refused
end

-- Adds `delta` (a number; `text`, if given, is it as a string) to `field` of the hash
-- `key`, deleting it at 0; returns the new value. The number goes as '%d': Redis would
-- write it with '%.17g', several times the cost.
local function contrib_add(key, field, delta, text)
  local value = redis.call('HINCRBY', key, field, text or string.format('%d', delta))
  if value == 0 then redis.call('HDEL', key, field) end
  return value
end

-- Adds `delta` (non-zero; `text` as contrib_add) to `field` of a stage's contributions
-- `key`, deleting it at 0; returns what that changes of the contributor's index count
-- (contrib_index): 1 when it made the field, -1 when it deleted it, else 0.
local function contrib_stage_add(key, field, delta, text)
  local value = contrib_add(key, field, delta, text)
  if value == 0 then return -1 end
  if value == delta then return 1 end
  return 0
end

-- Adds `change` to the index count `field` of the contributor's hash `ctr`, deleting it
-- at 0 or below (a field written before the index was kept has no count to drop).
local function contrib_index(ctr, field, change)
  if change == 0 then return end
  if redis.call('HINCRBY', ctr, field, string.format('%d', change)) <= 0 then
    redis.call('HDEL', ctr, field)
  end
end

-- The index field of a pair's parts in a slot (`member` nil: of the slot's budget use).
local function contrib_index_field(slot, member)
  if not member then return '@' .. slot end
  return '@' .. slot .. '\n' .. member
end

-- The hold of the contributor whose hash is `ctr` ('q', 'r' or nil: see the header), on a
-- board whose record counts `held` contributors holding one (its field ctr_q; none: nil).
local function contrib_flag(ctr, held)
  if not held or tonumber(held) <= 0 then return nil end
  return redis.call('HGET', ctr, 'q') or nil
end

-- Where the admitted sum of (by, member) in window `w` is kept in the contributor's hash
-- `ctr`, under its hold `flag`, and whether the member's total counts it: a pair's sum is
-- in one field only, '<w>\n<member>' (counted) or '!<w>\n<member>' (held). While a hold
-- or a release walks the hash (contrib_hold.lua) both kinds exist: a pair keeps the
-- field it has, and a new one goes where the walk moves them ('q': held).
local function contrib_sum_field(ctr, w, member, flag)
  local counted = w .. '\n' .. member
  if not flag then return counted, true end
  local held = '!' .. counted
  if flag == 'q' then
    if redis.call('HEXISTS', ctr, counted) == 1 then return counted, true end
    return held, false
  end
  if redis.call('HEXISTS', ctr, held) == 1 then return held, false end
  return counted, true
end

-- Adds `delta` (a number; `text` as contrib_add) to the admitted sum of (`by`, `member`)
-- in window `w` (seconds) kept in the contributor's hash `ctr` (hold `flag`); returns
-- what that changes of the member's counted part under `cap` (0 while held), and the
-- new sum. Without a hold it calls neither contrib_sum_field nor contrib_add: a capped
-- like calls it once a window, and each Lua function call costs Redis some hundreds of
-- instructions.
local function contrib_window(ctr, w, member, delta, cap, flag, text)
  local field, counts = w .. '\n' .. member, true
  if flag then field, counts = contrib_sum_field(ctr, w, member, flag) end
  local new = redis.call('HINCRBY', ctr, field, text or string.format('%d', delta))
  if new == 0 then redis.call('HDEL', ctr, field) end
  if not counts then return 0, new end
  return contrib_change(cap, new - delta, delta), new
end

-- Window 1 of a board whose window 1 is one slot long (contrib_derived) keeps no sums
-- '<W1>\n<member>': a pair's sum there is the sum of its parts in the stage-1
-- contributions of the slots window 1 has not retired (a retirement moves each part on
-- to stage 2), which a like's own stage HINCRBY mostly gives: a field and a command less
-- a like. A held pair's sum there is kept as in the other windows ('!<W1>\n<member>',
-- equal to that sum). Whether a board is such, from its record's slot and window 1.
local function contrib_derived(slot, w1)
  return slot ~= nil and slot ~= false and tonumber(slot) == tonumber(w1)
end

-- On such a board (its record's slot `slot`, window 1 `w1`), the starts of the slots
-- window 1 has not retired (its record's done:<W1> is `done`), from the slot index
-- `index`: usually the current slot only; nil on another board.
local function contrib_first_live(index, slot, w1, done)
  if not contrib_derived(slot, w1) then return nil end
  return redis.call('ZRANGEBYSCORE', index, done and ('(' .. done) or '-inf', '+inf')
end

-- The sum of the pair's parts in stage 1 (<prefix><s>:c) of the slots `live` but `skip`.
local function contrib_first_sum(prefix, live, pair, skip)
  local sum = 0
  for _, s in ipairs(live) do
    if s ~= skip then
      sum = sum + (tonumber(redis.call('HGET', prefix .. s .. ':c', pair)) or 0)
    end
  end
  return sum
end

-- Whether the pair's sum in window 1 of such a board, `before` (under the hold `flag`),
-- is held: as contrib_sum_field, with a counted sum 'existing' when it is not 0.
local function contrib_first_held(ctr, w, member, before, flag)
  if not flag then return false end
  if redis.call('HEXISTS', ctr, '!' .. w .. '\n' .. member) == 1 then return true end
  return flag == 'q' and before == 0
end

-- contrib_window for window 1 (`w`) of such a board, given the pair's sum there before
-- `delta`, `before`: a held sum's field follows; a counted one is the stages' own.
local function contrib_first(ctr, w, member, before, delta, cap, flag)
  if contrib_first_held(ctr, w, member, before, flag) then
    contrib_add(ctr, '!' .. w .. '\n' .. member, delta)
    return 0, before + delta
  end
  return contrib_change(cap, before, delta), before + delta
end

-- What a part `value` of (by, member) leaving window `w` changes of the member's counted
-- part there (as contrib_window), the part still in its stage: on window 1 one slot long
-- (`live`, contrib_first_live; `prefix`, of the board's slot keys) read from the stages.
local function contrib_leave(ctr, w, by, member, value, cap, flag, live, prefix)
  if not live then return (contrib_window(ctr, w, member, -value, cap, flag)) end
  local before = contrib_first_sum(prefix, live, by .. '\n' .. member)
  return (contrib_first(ctr, w, member, before, -value, cap, flag))
end

-- Walks the contributor's hash `ctr` from `cursor` with HSCAN MATCH `pattern` (20 a
-- step), calling each(field, value) for every field found, until the scan is over or a
-- next step would likely overrun `budget` µs at the pace of its slowest step so far;
-- returns the cursor to go on from ('0': over). Each field is handled whole in the call
-- (contrib_retract.lua, contrib_hold.lua).
local function contrib_walk(ctr, cursor, pattern, budget, each)
  local started, elapsed, slowest = now_us(), 0, 0
  repeat
    local before = elapsed
    local scan = redis.call('HSCAN', ctr, cursor, 'MATCH', pattern, 'COUNT', 20)
    local found = scan[2]
    for p = 1, #found, 2 do each(found[p], found[p + 1]) end
    cursor = scan[1]
    elapsed = now_us() - started
    slowest = math.max(slowest, elapsed - before)
  until cursor == '0' or elapsed + slowest > budget
  return cursor
end

-- Adds `change` (a number) to `member`'s total in window j (of n) for a script whose
-- KEYS are the board record, the slot index, the windows' totals, on a dense board their
-- tallies and distinct totals (in pairs, then a recompute's), then the member data
-- (contrib_retract.lua, contrib_hold.lua).
local function contrib_total(n, j, member, change)
  if change == 0 then return end
  local tally, dense = nil, nil
  if #KEYS > 3 + n then tally, dense = KEYS[2 + n + 2 * j - 1], KEYS[2 + n + 2 * j] end
  add_total(KEYS[2 + j], member, string.format('%d', change), tally, dense,
    j == n and KEYS[#KEYS] or nil)
end

-- How window `w` (seconds; its totals `totals`) would read were the contributors whose
-- hashes are `ctrs` not held (quarantined): rank_as_if's `moved`, for every member they
-- hold a counted part of there ('!<w>\n<member>', capped) that is not hidden. Costs
-- their hashes' fields (an HSCAN MATCH of each).
local function contrib_as_if(ctrs, w, cap, totals)
  local prefix = '!' .. w .. '\n'
  local parts, members = {}, {}
  for _, ctr in ipairs(ctrs) do
    local found, cursor = {}, '0'
    repeat
      local scan = redis.call('HSCAN', ctr, cursor, 'MATCH', prefix .. '*', 'COUNT', 100)
      local list = scan[2]
      for p = 1, #list, 2 do
        local member = string.sub(list[p], #prefix + 1)
        if not found[member] then
          found[member] = true
          if parts[member] == nil then members[#members + 1] = member end
          parts[member] = (parts[member] or 0) + contrib_capped(cap, tonumber(list[p + 1]))
        end
      end
      cursor = scan[1]
    until cursor == '0'
  end
  local moved = {}
  for from = 1, #members, 1000 do
    local chunk = { unpack(members, from, math.min(from + 999, #members)) }
    local scores = redis.call('ZMSCORE', totals, unpack(chunk))
    local hidden = hidden_members and redis.call('HMGET', hidden_members, unpack(chunk)) or {}
    for x, member in ipairs(chunk) do
      if parts[member] ~= 0 and not hidden[x] then
        local total = tonumber(scores[x]) or false
        moved[member] = { total, (total or 0) + parts[member] }
      end
    end
  end
  return moved
end
