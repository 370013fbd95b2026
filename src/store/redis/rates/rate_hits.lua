-- rate_hits.lua: counts batches of hits of one or more rate keys, each key's hits in its
-- time ring hit by hit in the order given, with the rules of src/rates/ring.rs (as
-- rate_hit.lua, which keeps checks). One call carries many keys so that its fixed cost
-- is shared (on a Cluster, keys of one hash slot only). The script goes on in
-- rate_play.lua and rate_keys.lua, sent after this file as one script.
--
-- The caller computed, from `now` alone, which tiers count each hit and which counters
-- it adds to; that is exact when the heads the batch leaves (per tier, the newer of the
-- head and `need`, the newest slot the batch reaches) stay below `lim` (the oldest slot
-- it counts, plus the tier's slots). The caller also sends its guess of the key's finest
-- head (from its last reply, see src/store/redis/rate_heads.rs). Per key, in that case,
-- one Redis command (every argument a string the caller sent or one formatted once per
-- call: Lua turning a number into a string costs more than the command):
--
-- - guess -1 (a key the caller has not seen), when fresh: the whole ring by one
--   `SET .. PX .. NX` (heads at `need`, counters at what the batch adds);
-- - a guessed head below `need` (the head moves; nested tiers): one BITFIELD sets the
--   heads (the first SET answers the head it replaced: the guess is checked), clears the
--   slots the heads pass (the counters the batch adds to there set to their add) and adds
--   the rest under OVERFLOW FAIL; slots past SHORT on a tier are written after it, by
--   SETRANGE of their bytes. A wrong guess or a failed add: every op is undone from the
--   values the BITFIELD answered, and the key goes the general way below;
-- - otherwise one BITFIELD reads the heads (GETs first: the finest head alone when each
--   tier's slot is a multiple of the finest's, see heads_of) and adds the batch's counts
--   (INCRBYs, one per counter, under OVERFLOW FAIL). When no head moved, that is all;
--   when one did (the guess was missing or wrong), a second BITFIELD clears the slots it
--   passed, sets the counters of the new slots and the heads.
--
-- Otherwise (hits the batch itself pushes out of a tier, an add that fails) the heads
-- and the counters' values before the adds are known from that same reply, and the hits
-- are played in Lua on a sparse view of the ring, as below, then written with one
-- BITFIELD (the clears of the slots a head passed, the heads, every counter the adds
-- touched set to its value). A head that passes more than SHORT slots is cleared by
-- SETRANGE.
--
-- Should an add fail (a counter would pass 2^32 - 1), the others are undone and the
-- hits are played with the counters they only add to unread: their INCRBYs run first,
-- under OVERFLOW FAIL; should one fail again, the BITFIELD's other ops are undone from
-- the values it returned and the hits are played one at a time, each reading its
-- counters first, so an overflowing hit changes nothing and the others count, exactly
-- as one by one.
--
-- KEYS[1 .. K]  the rate keys (rate_{<key>}_<tiers>)
-- ARGV[1]  now, unix ms            ARGV[2]  T, the number of tiers
-- ARGV[3 .. 2+2T]  per tier: slot length (ms), slots
-- then per key, in key order:
--   H, C, G         its hits, the counters they add to, the guess of its finest head
--                   as stored (slot + 1; -1: not known)
--   need[1 .. T]    per tier: the newest slot its hits reach (at least now's)
--   lim[1 .. T]     per tier: the oldest slot counted there, plus the tier's slots
--                   (9223372036854775807 when none)
--   C pairs         bit offset of a counter, what the hits add to it
--   H pairs         per hit: its time (unix ms), its count (1 .. 2^32-1)
--
-- The key expires when its newest slot leaves its longest tier (it then holds nothing),
-- set when that moment moves.
--
-- Returns per key: an empty table when its hits counted as the caller computed, else per
-- hit in order: the tiers that counted it (0: too late for every tier), or -1 when a
-- counter would pass 2^32 - 1; either way such a hit changed nothing. Then one more
-- table: per key, its finest head as stored after the call (-1: not known).

local key -- the key being played
local hits_at -- ARGV index of its first hit
local now = tonumber(ARGV[1])
local ntiers = tonumber(ARGV[2])
local MAX_COUNT = 4294967295
local SHORT = 8
local floor, min = math.floor, math.min

-- Per tier (at most 8): slot length, slots, bit offset of its counters, current slot.
local g, n, base, now_slot = { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 },
  { 0, 0, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0 }
local size = 8 * ntiers
for t = 1, ntiers do
  g[t] = tonumber(ARGV[1 + 2 * t])
  n[t] = tonumber(ARGV[2 + 2 * t])
  base[t] = 8 * size
  size = size + 4 * n[t]
  now_slot[t] = floor(now / g[t])
end

-- `make` with its results kept by argument, each made once per call, and the table
-- that keeps them.
local function memo(make)
  local made = {}
  return function(v)
    local r = made[v]
    if r == nil then
      r = make(v)
      made[v] = r
    end
    return r
  end, made
end

-- Integers as command arguments, each formatted once per call (the same offsets, heads
-- and small counts recur from key to key).
local str, strs = memo(function(v) return string.format('%d', v) end)

-- Strings of `len` zero bytes (for SETRANGE).
local zeros = memo(function(len) return string.rep('\0', len) end)

-- Clears, by SETRANGE, the k positions of tier t from p on (wrapping past its last).
local function clear_slots(t, p, k)
  local part = min(k, n[t] - p)
  redis.call('SETRANGE', key, str(base[t] / 8 + 4 * p), zeros(4 * part))
  if k > part then
    redis.call('SETRANGE', key, str(base[t] / 8), zeros(4 * (k - part)))
  end
end

-- Every hit moves every tier's head to the slot of the same instant (the later of now
-- and its time; see ring.rs), so each head is that of one instant X, the latest ever
-- played: head t = floor(X / g[t]). When each tier's slot length is a multiple of the
-- finest's (the default tiers), head t = floor(head 1 * g[1] / g[t]): the first
-- BITFIELD reads the finest head only (each op it saves is ~0.25 us of Redis per key).
local nested = true
for t = 2, ntiers do
  if g[t] % g[1] ~= 0 then
    nested = false
  end
end
local nread = nested and 1 or ntiers

-- The BITFIELD ops that read the heads, then OVERFLOW FAIL for the adds after them.
local READ_HEADS = {}
for t = 1, nread do
  READ_HEADS[3 * t - 2], READ_HEADS[3 * t - 1], READ_HEADS[3 * t] = 'GET', 'i64', str(64 * (t - 1))
end
READ_HEADS[3 * nread + 1], READ_HEADS[3 * nread + 2] = 'OVERFLOW', 'FAIL'

-- The stored heads (slot + 1; 0 while empty) of every tier from the first BITFIELD's
-- reply.
local function heads_of(reply)
  if not nested then
    return reply
  end
  local heads, h1 = {}, reply[1]
  for t = 1, ntiers do
    if h1 == 0 then
      heads[t] = 0
    else
      heads[t] = floor((h1 - 1) * g[1] / g[t]) + 1
    end
  end
  return heads
end
-- Adding 0 to the last byte: a fresh key is made its full size at once, zeros.
local GROW_AT = str(8 * (size - 1))

-- Whether position p of tier t is among the k positions from `from` on.
local function within(t, p, from, k)
  return k >= n[t] or (p - from) % n[t] < k
end
