-- write_plain.lua: the common write, lean: summed entries (write.lua's mode 'sums') to
-- plain slots of a board that no recompute holds, without a token, key or standing,
-- and without dense tallies. It carries none of write.lua's variants, so a call costs
-- Redis about half of write.lua's fixed part and a third less per entry
-- (docs/performance.md, "Single-event writes"). When it finds the board needs one of
-- them it applies nothing and answers {6}; the caller then sends the same call to
-- write.lua.
--
-- KEYS[1]                    board record      board_{b}
-- KEYS[2]                    slot index        slots_{b}
-- KEYS[3]                    slot geometries   slotgeo_{b}
-- KEYS[3+j], j = 1..n        totals of window j, smallest window first
-- KEYS[3+n+(i-1)*n+k]        stage k (1..n) of distinct slot i (1..m)
-- KEYS[4+n+m*n]              member data       data_{b}
--
-- ARGV[1]                    board version the caller expects
-- ARGV[2], ARGV[3]           n (windows) and m (distinct slots)
-- ARGV[4]                    the sum of |delta| over the original events
-- ARGV[5]                    the budget: '' (apply every entry) or '<µs> <stride>'
-- ARGV[5+j], j = 1..n        window j in seconds
-- ARGV[5+n+j], j = 1..n      cutoff of window j at the caller's now
-- ARGV[5+2n+i], i = 1..m     start of distinct slot i, each at or after the caller's
--                            open slot (so a slot this call creates is plain)
-- then the entries: with one slot member, delta; with several, slot number i, member,
-- delta.
--
-- It does what write.lua does for such a call (freeze, stages, HINCRBY and ZINCRBY,
-- deletion at exactly 0, the member data of a largest-window total that reaches 0,
-- abs_sum; a hidden member's totals in <totals>:hidden, see hidden_members) and answers
-- the same {0, µs, e, too-late slot number ...}. It answers {6} before changing anything
-- when abs_sum leaves no room for ARGV[4] (the checked path), a recompute is recorded
-- (rb_window), or one of the slots has a geometry (compact, or being relaid out). On a
-- gated board it applies the gate (lua/review.lua), then, on a watched board, records the
-- changes of its watched tops (lua/watch.lua). Error "STALE ..." as write.lua.

local MAX = 9007199254740991
local n, m = ARGV[2] + 0, ARGV[3] + 0
local board, index, data = KEYS[1], KEYS[2], KEYS[4 + n + m * n]
local TOTALS, STAGES, A = 3, 3 + n, 5
local first = A + 2 * n + m + 1
local numbered = (m == 1) and 0 or 1
local step = 2 + numbered
local count = (#ARGV - first + 1) / step

-- The budget (ARGV[5]): the call reads the server's clock at its start, after every
-- `stride` entries and at its end, to stop once it has run `limit` µs and to answer its
-- duration, only when it has more than `stride` entries. A smaller call never stops; it
-- answers 0 µs, which the caller does not take in (sums/budget.rs): two TIME calls cost
-- Redis about as much as a single like's HINCRBY and ZINCRBYs.
local limit, stride = nil, 0
if ARGV[5] ~= '' then
  local us, every = string.match(ARGV[5], '^(%d+) (%d+)$')
  limit, stride = us + 0, every + 0
end
local started = limit and count > stride and now_us()

local fields = { 'version', 'quiet', 'abs_sum' }
for j = 1, n do fields[3 + j] = 'wm:' .. ARGV[A + j] end
local record = board_record(board, ARGV[1], unpack(fields, 3))
if quiet_due then requiet(board) end
local bound = tonumber(record[3])
if not bound or bound + ARGV[4] > MAX or busy_fields(board, 'rb_window') then
  return { 6 }
end
for _, g in ipairs(redis.call('HMGET', KEYS[3], unpack(ARGV, A + 2 * n + 1, A + 2 * n + m))) do
  if g then return { 6 } end
end

local stage = write_stages(board, fields, record, 3, A + n, A + 2 * n, n, m)
for i = 1, m do
  local ts = ARGV[A + 2 * n + i]
  if stage[i] < n then redis.call('ZADD', index, 'NX', ts, ts) end
end

local too_late, grown, e = {}, 0, 0
-- On a watched board: per window, the highest public total a write touched, before or
-- after it (see record_changes); none on a gated board, whose holds move others too.
local high = watch_spec and not review_rank and {}
while e < count do
  local at = first + step * e
  local i = numbered == 1 and ARGV[at] + 0 or 1
  local member, delta = ARGV[at + numbered], ARGV[at + numbered + 1]
  local k = stage[i]
  if k == n then
    too_late[i] = true
  elseif delta ~= '0' then
    local target = KEYS[STAGES + (i - 1) * n + k + 1]
    if redis.call('HINCRBY', target, member, delta) == 0 then
      redis.call('HDEL', target, member)
    end
    -- A hidden member's totals are kept apart (see hidden_members), as add_total does.
    local apart = hidden_members and redis.call('HEXISTS', hidden_members, member) == 1
    if review_rank then gate_changed[member] = true end
    for j = k + 1, n do
      local totals = KEYS[TOTALS + j]
      if apart then totals = totals .. ':hidden' end
      local total = redis.call('ZINCRBY', totals, delta, member)
      if total == '0' then
        redis.call('ZREM', totals, member)
        if j == n then redis.call('HDEL', data, member) end
      end
      if high and not apart then
        local w, after = ARGV[A + j], tonumber(total)
        high[w] = math.max(high[w] or after, after, after - tonumber(delta))
      end
    end
    grown = grown + math.abs(delta)
  end
  e = e + 1
  if started and e % stride == 0 and e < count and now_us() - started >= limit then break end
end
if grown > 0 then redis.call('HINCRBY', board, 'abs_sum', grown) end
gate(board)
record_changes(board, 'write', high)
local reply = { 0, 0, e }
for i in pairs(too_late) do reply[#reply + 1] = i end
if started then reply[2] = now_us() - started end
return reply
