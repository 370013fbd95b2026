-- trend_write.lua: add events to a trending board, each delta forward-decayed to the
-- record's landmark (and, while a rescale runs, to its new landmark in the next set too).
--
-- KEYS[1]  board record   board_{b}
-- KEYS[2]  stored values  trend_{b}       (zset, member -> -Σ delta·2^((at − landmark)/h))
-- KEYS[3]  rescale build  trend_{b}_next  (the same for rs_landmark)
-- KEYS[4]  with a key: this call's record, idem_{b}_<version>_<call name>
--
-- ARGV[1]  expected board version
-- ARGV[2]  the most half-lives an event may be after the landmark
-- ARGV[3]  with a key: the write's fingerprint ('' without a key)
-- ARGV[4], ARGV[5], ARGV[6]   with a key: the caller's now, the record's deadline (unix
--          ms) and its TTL (ms)
-- ARGV[7]  the call's time budget: '<µs> <every>' (stop at the first multiple of
--          `every` events once the call has run µs), or '' (apply every event)
-- ARGV[3k+5], ARGV[3k+6], ARGV[3k+7], k = 1..n   member, delta (integer), at (unix ms)
--
-- Budget: a batch is sent in calls of at most the board's cap of events (the store's
-- per-board estimate, as for windowed writes), and each call also stops itself: every
-- `every` events it reads TIME and, once it has run its budget, stops there, having
-- applied at least `every` events (progress). It answers how many it applied; the
-- caller sends the rest in the next call. Only a call of more than `every` events, the
-- only one that can stop, reads the clock; a smaller one answers 0 µs, which the caller
-- does not take in (sums/budget.rs). Events are independent ZINCRBYs, so any
-- prefix is a whole number of events and a stop never splits one.
--
-- Key: a client's idempotency key. A keyed batch is one record per call (the caller
-- names each after the event it starts at); the record (the prelude's key records:
-- '<fingerprint>:<events applied> <now> <deadline>') is set with PX = TTL in the same
-- call that applies the events. A call finding a record whose deadline is after its now
-- applies nothing and returns {4, recorded now, events applied} when the fingerprint is
-- the same (-1 events: a record of the versions that sent a batch in one call, which
-- covers the whole batch), {5} when it is not. A record past its deadline by the
-- caller's clock is as good as absent (and overwritten); Redis deletes it at its PX.
--
-- Values are stored negated, so the ascending order of the zset is the ranking (highest
-- score first, ties by member ascending) and ranked members are those below 0. The
-- scale is computed here from the record, so a write never uses a landmark a rescale
-- has just moved. Floats go to ZINCRBY with 17 significant digits (exact).
-- Returns {1, events applied, µs the call ran by the server's clock (0: not timed)}.
-- Refuses with STALE (board gone or re-created) or RESCALE (an event of the call further
-- than ARGV[2] half-lives from the landmark: the caller rescales, then sends the call
-- again); a refusal applies nothing.

local FIRST = 8
local budget, every = string.match(ARGV[7], '^(%d+) (%d+)$')
budget, every = tonumber(budget), tonumber(every)
local started = budget and (#ARGV - FIRST + 1) / 3 > every and now_us()
local record = board_record(KEYS[1], ARGV[1], 'landmark', 'half_life', 'rs_landmark')
local landmark = tonumber(record[3])
local h = tonumber(record[4]) * 1000
local next_landmark = record[5] and tonumber(record[5])
local limit = tonumber(ARGV[2]) * h
local fingerprint = ARGV[3]
if fingerprint ~= '' then
  local found = key_record(KEYS[4], fingerprint, ARGV[4])
  if found == false then return { 5 } end
  if found then return { 4, found[1], found[2] } end
end
for a = FIRST, #ARGV, 3 do
  if tonumber(ARGV[a + 2]) - landmark > limit then
    refuse('RESCALE an event is too far from the landmark; rescale first')
  end
end
local applied = 0
for a = FIRST, #ARGV, 3 do
  local member, delta, at = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  redis.call('ZINCRBY', KEYS[2], string.format('%.17g', -delta * 2 ^ ((at - landmark) / h)), member)
  if next_landmark then
    redis.call('ZINCRBY', KEYS[3],
      string.format('%.17g', -delta * 2 ^ ((at - next_landmark) / h)), member)
  end
  applied = applied + 1
  -- A stop point: stop once the budget is spent (TIME is read here only).
  if started and applied % every == 0 and a + 3 <= #ARGV and now_us() - started >= budget then
    break
  end
end
if fingerprint ~= '' then
  set_key_record(KEYS[4], fingerprint, applied, ARGV[4], ARGV[5], ARGV[6])
end
return { 1, applied, started and now_us() - started or 0 }
