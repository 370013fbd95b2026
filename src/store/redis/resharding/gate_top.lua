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
-- ties), or the ranked members end. Returns per window {member, total, ...}. Error
-- "STALE ..." as write.lua.

local board, k = KEYS[1], tonumber(ARGV[2])
board_record(board, ARGV[1])
local allowed, n = board .. ':allowed', #KEYS - 1
local rule = rank_rule(redis.call('HGET', board, 'rank'))
local STEP = 100
local reply = {}
for j = 1, n do
  -- kept: member, total, ...; last: the K-th kept's total, once K are kept.
  local totals, kept, from, ended, last = KEYS[1 + j], {}, 0, false, nil
  while not ended do
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
