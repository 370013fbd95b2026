-- write_max.lua: the write of a max board (a min board too: the caller negates its
-- values), docs/design.md, "Max and min boards".
--
-- KEYS[1]                    board record      board_{b}
-- KEYS[2]                    slot index        slots_{b}
-- KEYS[3]                    peaks             peaks_{b}: member -> its peak list
-- KEYS[3+j], j = 1..n        totals of window j, smallest window first
-- KEYS[3+n+i], i = 1..m      distinct slot i's hash: member -> its highest value there
--
-- ARGV[1]                    board version the caller expects
-- ARGV[2], ARGV[3]           n (windows) and m (distinct slots)
-- ARGV[3+j], j = 1..n        window j in seconds
-- ARGV[3+n+j], j = 1..n      cutoff of window j at the caller's now
-- ARGV[3+2n+i], i = 1..m     start of distinct slot i
-- then the entries, triples: slot number i, member, value (integers within 2^53).
--
-- Freezes every window up to its cutoff (write_stages), then per entry: a slot that
-- every window froze is too late; else the slot's hash keeps the member's highest value
-- there, its peak list takes (slot, value), and each window that counts the slot (its
-- watermark older than the slot) raises the member's value with ZADD GT. Each of these
-- is done in bulk for the call's entries (at most a few hundred: the caller's calls).
-- Every step keeps a maximum, so a call applied twice leaves what it left once: the
-- caller may send it again after a lost reply.
-- Returns {too-late slot number ...}. Error "STALE ..." as write.lua.

local n, m = tonumber(ARGV[2]), tonumber(ARGV[3])
local board, index, peaks = KEYS[1], KEYS[2], KEYS[3]
local TOTALS, SLOTS, A = 3, 3 + n, 3

local fields = { 'version', 'dropping' }
for j = 1, n do fields[2 + j] = 'wm:' .. ARGV[A + j] end
local record = board_record(board, ARGV[1], unpack(fields, 3))
local stage = write_stages(board, fields, record, 2, A + n, A + 2 * n, n, m)
for i = 1, m do
  local ts = ARGV[A + 2 * n + i]
  if stage[i] < n then redis.call('ZADD', index, 'NX', ts, ts) end
end

-- The entries of slots some window still counts, in order; the slots' held values and
-- the members' peak lists read in bulk (one HMGET per slot, one for the lists), then
-- written in bulk (one HSET per slot, one for the lists, one ZADD GT per window).
local too_late, live = {}, {}
for at = A + 2 * n + m + 1, #ARGV, 3 do
  local i = tonumber(ARGV[at])
  if stage[i] == n then
    too_late[i] = true
  else
    live[#live + 1] = at
  end
end
if #live > 0 then
  local by_slot, members, listed = {}, {}, {}
  for _, at in ipairs(live) do
    local i, member = tonumber(ARGV[at]), ARGV[at + 1]
    by_slot[i] = by_slot[i] or {}
    by_slot[i][#by_slot[i] + 1] = at
    if not listed[member] then
      listed[member] = true
      members[#members + 1] = member
    end
  end
  for i, ats in pairs(by_slot) do
    local fields = {}
    for x, at in ipairs(ats) do fields[x] = ARGV[at + 1] end
    local held = redis.call('HMGET', KEYS[SLOTS + i], unpack(fields))
    local higher = {}
    for x, at in ipairs(ats) do
      if not held[x] or tonumber(ARGV[at + 2]) > tonumber(held[x]) then
        higher[#higher + 1] = ARGV[at + 1]
        higher[#higher + 1] = ARGV[at + 2]
      end
    end
    if #higher > 0 then redis.call('HSET', KEYS[SLOTS + i], unpack(higher)) end
  end
  local stored = redis.call('HMGET', peaks, unpack(members))
  local lists, changed = {}, {}
  for x, member in ipairs(members) do lists[member] = stored[x] end
  local raise = {}
  for j = 1, n do raise[j] = {} end
  for _, at in ipairs(live) do
    local i, member, value = tonumber(ARGV[at]), ARGV[at + 1], ARGV[at + 2]
    local list = peaks_add(lists[member], ARGV[A + 2 * n + i], value)
    if list then
      lists[member] = list
      changed[member] = true
    end
    for j = stage[i] + 1, n do
      local args = raise[j]
      args[#args + 1] = value
      args[#args + 1] = member
    end
  end
  local write = {}
  for _, member in ipairs(members) do
    if changed[member] then
      write[#write + 1] = member
      write[#write + 1] = lists[member]
    end
  end
  if #write > 0 then redis.call('HSET', peaks, unpack(write)) end
  for j = 1, n do
    if #raise[j] > 0 then redis.call('ZADD', KEYS[TOTALS + j], 'GT', unpack(raise[j])) end
  end
end
local reply = {}
for i in pairs(too_late) do reply[#reply + 1] = i end
return reply
