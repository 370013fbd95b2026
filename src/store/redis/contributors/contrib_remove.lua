-- contrib_remove.lua: remove one member's contributions from some slots of a board that
-- keeps contributors (lua/contributors.lua), keeping its totals exact; remove_member.lua
-- then removes its member values.
--
-- KEYS[1]                  board record      board_{b}
-- KEYS[2]                  slot index        slots_{b}
-- KEYS[2+j], j = 1..n      totals of window j, smallest first
-- KEYS[2+n+(i-1)*n+k]      stage k (1..n) of slot i (1..m), as in write.lua (their
--                          contributions are <stage>:c, the slot's history <stage 1>:cm)
-- then, on a dense board only, per window j: its tally and distinct totals
-- KEYS[#KEYS]              member data       data_{b}
--
-- ARGV[1]  board version the caller expects (with the caller's now and cause, see
--          board_record)
-- ARGV[2]  the member
-- ARGV[3]  m, the number of slots
-- ARGV[3+j], j = 1..n  the windows, seconds
-- ARGV[3+n+i], i = 1..m  the start of slot i
--
-- An admitted pair (by, member) in stage k of a slot is counted in the contributor's
-- sums of windows k..n: each loses it (on window 1 one slot long, its sum is read from
-- the stages, contrib_derived), and the member's total there what that changes of its
-- counted part; the budget it used stays used (a refused part is kept in its stage
-- only). The
-- contributor's index counts the fields deleted (contrib_index).
-- The member's pairs are found by HSCAN ... MATCH '*\n<member>' over each
-- stage's contributions: O(the stage's pairs), a moderation step, not a hot path.
-- Called in batches of slots; each batch keeps every window exact.
-- Returns the number of pair values deleted. Error "STALE ..." as in write.lua.

local board, member = KEYS[1], ARGV[2]
local record = board_record(board, ARGV[1], 'per_contributor_member', 'ctr_q', 'slot',
  'done:' .. ARGV[4])
local cap = tonumber(record[3])
local m = tonumber(ARGV[3])
local n = #ARGV - 3 - m
local TOTALS, STAGES = 2, 2 + n
local dense_board = #KEYS > 3 + n + m * n
-- Window 1 one slot long: the slots it has not retired, and what their keys start with.
local first_live = contrib_first_live(KEYS[2], record[5], ARGV[4], record[6])
local prefix = string.sub(KEYS[STAGES + 1], 1, #KEYS[STAGES + 1] - #ARGV[4 + n])
local DENSE = STAGES + m * n
local pattern = '*\n' .. string.gsub(member, '([%*%?%[%]\\])', '\\%1')

local removed = 0
for i = 1, m do
  for k = 1, n do
    local pairs_key = KEYS[STAGES + (i - 1) * n + k] .. ':c'
    local cursor = '0'
    repeat
      local scan = redis.call('HSCAN', pairs_key, cursor, 'MATCH', pattern, 'COUNT', 1000)
      local found = scan[2]
      for p = 1, #found, 2 do
        local field, value = found[p], tonumber(found[p + 1])
        -- The first \n splits: a member holding one matches only its own pairs.
        local by, of, refused = contrib_field(field)
        if of == member then
          local ctr = board .. ':ctr:' .. by
          local flag = not refused and contrib_flag(ctr, record[4]) or nil
          for j = k, refused and 0 or n do
            local change = contrib_leave(ctr, ARGV[3 + j], by, member, value, cap, flag,
              j == 1 and first_live, prefix)
            if change ~= 0 then
              local tally, dense = nil, nil
              if dense_board then tally, dense = KEYS[DENSE + 2 * j - 1], KEYS[DENSE + 2 * j] end
              add_total(KEYS[TOTALS + j], member, string.format('%d', change), tally, dense,
                j == n and KEYS[#KEYS] or nil)
            end
          end
          redis.call('HDEL', pairs_key, field)
          contrib_index(ctr, contrib_index_field(ARGV[3 + n + i], member), -1)
          removed = removed + 1
        end
      end
      cursor = scan[1]
    until cursor == '0'
  end
  redis.call('HDEL', KEYS[STAGES + (i - 1) * n + 1] .. ':cm', member)
end
gate(board)
record_changes(board, 'remove')
return removed
