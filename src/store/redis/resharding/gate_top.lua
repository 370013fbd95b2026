-- gate_top.lua: what a shard of a gated sharded board tells the gate across its shards
-- (docs/design.md, "A review gate on a sharded board"): in each window, its top K
-- allowed public members.
--
-- KEYS[1]    the shard's record      board_{b}
-- KEYS[1+j]  totals of window j      stats_{b} or stats_{b}_<W>   (j = 1..n)
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  K, the gate's rank
--
-- Walks each window's public totals from the top, 100 members a step, keeping those in
-- board_{b}:allowed (SMISMEMBER) whose totals are ranked, until K are kept and the
-- totals fall under the K-th's (so every member tied with it is kept: the caller orders
-- ties), or the ranked members end. When the first step finds fewer than K and the
-- shard allowed at most 10,000 members, it reads every allowed member's total instead
-- (ZMSCORE; a shard that allowed few members does not walk its whole ranking). Returns
-- per window {member, total, ...}, in no order past the K-th. Error "STALE ..." as
-- write.lua.

local board, k = KEYS[1], tonumber(ARGV[2])
board_record(board, ARGV[1])
local allowed, n = board .. ':allowed', #KEYS - 1
local rule = rank_rule(redis.call('HGET', board, 'rank'))
local STEP = 100
-- Of the allowed members, at most this many are read by their totals at once.
local BY_TOTALS = 10000
local reply, by_totals = {}, nil

-- The allowed members' ranked totals in window `totals`, read by member (ZMSCORE, 1,000
-- at a time; a hidden or held member is not in the totals): {member, total, ...}, the
-- K best and every one tied with the K-th.
local function allowed_totals(totals)
  if not by_totals then by_totals = redis.call('SMEMBERS', allowed) end
  local found = {}
  for from = 1, #by_totals, 1000 do
    local chunk = { unpack(by_totals, from, math.min(from + 999, #by_totals)) }
    local scores = redis.call('ZMSCORE', totals, unpack(chunk))
    for x, member in ipairs(chunk) do
      if scores[x] and ranked_total(scores[x], rule) then
        found[#found + 1] = { member, tonumber(scores[x]), scores[x] }
      end
    end
  end
  table.sort(found, function(a, b) return a[2] > b[2] end)
  -- The top K and every one tied with the K-th.
  local flat, kth = {}, nil
  for x, e in ipairs(found) do
    if kth and e[2] < kth then break end
    flat[#flat + 1] = e[1]
    flat[#flat + 1] = e[3]
    if x == k then kth = e[2] end
  end
  return flat
end

for j = 1, n do
  -- kept: member, total, ...; last: the K-th kept's total, once K are kept.
  local totals, kept, from, ended, last = KEYS[1 + j], {}, 0, false, nil
  while not ended do
    -- Past the first step with fewer than K allowed found, a board of few allowed
    -- members reads theirs by member instead of walking on.
    if from > 0 and not last and redis.call('SCARD', allowed) <= BY_TOTALS then
      kept = allowed_totals(totals)
      break
    end
    local step = redis.call('ZREVRANGE', totals, from, from + STEP - 1, 'WITHSCORES')
    ended = #step < 2 * STEP
    local members = {}
    for x = 1, #step, 2 do
      if not ranked_total(step[x + 1], rule) or (last and tonumber(step[x + 1]) < last) then
        ended = true
        break
      end
      members[#members + 1] = step[x]
    end
    if #members > 0 then
      local found = redis.call('SMISMEMBER', allowed, unpack(members))
      for x, member in ipairs(members) do
        if found[x] == 1 and not (last and tonumber(step[2 * x]) < last) then
          kept[#kept + 1] = member
          kept[#kept + 1] = step[2 * x]
          if not last and #kept == 2 * k then last = tonumber(step[2 * x]) end
        end
      end
    end
    from = from + STEP
  end
  reply[j] = kept
end
return reply
