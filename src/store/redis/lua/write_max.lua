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
-- watermark older than the slot) raises the member's value with ZADD GT.
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

local too_late = {}
for at = A + 2 * n + m + 1, #ARGV, 3 do
  local i = tonumber(ARGV[at])
  local member, value = ARGV[at + 1], ARGV[at + 2]
  local k = stage[i]
  if k == n then
    too_late[i] = true
  else
    local slot = KEYS[SLOTS + i]
    local held = redis.call('HGET', slot, member)
    if not held or tonumber(value) > tonumber(held) then
      redis.call('HSET', slot, member, value)
    end
    local list = peaks_add(redis.call('HGET', peaks, member), ARGV[A + 2 * n + i], value)
    if list then redis.call('HSET', peaks, member, list) end
    for j = k + 1, n do
      redis.call('ZADD', KEYS[TOTALS + j], 'GT', value, member)
    end
  end
end
local reply = {}
for i in pairs(too_late) do reply[#reply + 1] = i end
return reply
