-- base.lua: the server's clock, refusals, the board record's guard, a field set or
-- deleted, the recompute lease and negation, which every other file of this folder may use.
--
-- A string sure to hold a number is made one by arithmetic (`s + 0`, or `s` in a sum)
-- on the hot paths: Lua 5.1's tonumber is a C call that parses the string twice, about
-- 1,000 instructions of Redis more each (measured); tonumber stays where the string
-- may be absent or not a number.

-- Microseconds since the epoch, by the server's clock.
local function now_us()
  local t = redis.call('TIME')
  return t[1] * 1000000 + t[2]
end

-- Milliseconds since the epoch, by the server's clock.
local function now_ms()
  return math.floor(now_us() / 1000)
end

-- Refuses the call with an error reply whose first word says why (STALE, ORDER, ...).
local function refuse(reason)
  error(redis.error_reply(reason))
end

-- The hash of the board's hidden members (field = member), board_{b}:hidden, when the
-- record board_record read last counts any ('hidden'), else false: add_total and
-- bulk_add then keep a hidden member's totals apart, in <totals>:hidden (docs/design.md,
-- "Hidden members"). A board that hides none pays one HMGET field for it.
local hidden_members = false

-- The rank K of the board's review gate (a number) when the record board_record read last
-- sets one ('review'), else false; then the members whose window totals this call changed
-- (add_total, bulk_add), as keys: gate (lua/review.lua) looks at them once the call is done.
local review_rank, gate_changed = false, false

-- Notes that the window totals of `members` (a list) changed, for the gate (nothing on a
-- board without one).
local function gate_touched(members)
  if not review_rank then return end
  for _, member in ipairs(members) do gate_changed[member] = true end
end

-- The board's watched tops, the record's 'watch' ('<W>:<N> ...', see lua/watch.lua) when
-- the record board_record read last sets any, else false.
local watch_spec = false

-- The caller's now (unix ms, by the service's clock) when it sent one with the version it
-- expects ('<version>@<ms>'), else false: the time of the changes a call records
-- (lua/watch.lua); and the cause it gives them ('<version>@<ms>:<cause>'), else false.
local caller_now, caller_cause = false, false

-- A record's 'quiet' ('1') says it has none of 'dropping', 'hidden' (but '0'), 'review'
-- and 'watch', and no mark of a state that comes and goes: a recompute's ('rb_window',
-- with its rb_*), a max board's member removal's ('rm_member', with its rm_*) and held
-- contributors' ('ctr_q'). board_record then reads one field for the four and
-- busy_fields none of those states': each absent field costs Redis a look at every field
-- of the record. create_board.lua sets it; every script that sets one of them deletes it
-- first (unquiet); a script that writes sets it again (requiet) on a record board_record
-- found without it and without them, so a record written before it existed gains it at
-- its board's next write or retirement (and loses the previous release's 'bare', which
-- stood for the four only).
-- Whether the record board_record read last may be made quiet (requiet), and whether it
-- holds a mark of one of those states (busy_fields).
local quiet_due, busy = false, false

-- The board record's field 'version', then false (record[2], once its 'quiet'), then
-- `...` (so record[3] is the first of `...`), and hidden_members, review_rank,
-- watch_spec, caller_now and caller_cause.
-- Refuses with STALE when the record is missing, being dropped, or of another version
-- than `version`, the one the caller expects ('<version>', or with its now and cause).
local function board_record(board, version, ...)
  caller_now, caller_cause = false, false
  if string.find(version, '@', 1, true) then
    local now, cause
    version, now, cause = string.match(version, '^([^@]*)@(%d+):?(%a*)$')
    caller_now, caller_cause = tonumber(now), cause ~= '' and cause
  end
  local record = redis.call('HMGET', board, 'version', 'quiet', ...)
  local dropping, hidden, review, watch = false, false, false, false
  quiet_due, busy = false, false
  if record[1] and not record[2] then
    local recompute, removal, held
    dropping, hidden, review, watch, recompute, removal, held = unpack(redis.call('HMGET',
      board, 'dropping', 'hidden', 'review', 'watch', 'rb_window', 'rm_member', 'ctr_q'))
    if hidden == '0' then hidden = false end
    busy = recompute or removal or held or false
    quiet_due = not (hidden or review or watch or busy)
  end
  if record[1] ~= version or dropping then
    refuse('STALE board record missing, dropped or of another version')
  end
  record[2] = false
  review_rank = tonumber(review) or false
  watch_spec = watch or false
  gate_changed = review_rank and {} or false
  hidden_members = hidden and board .. ':hidden'
  return record
end

-- The fields `...` of the record board_record read last that only a busy one has (a
-- recompute's rb_*, a removal's rm_*, ctr_q; see quiet_due): none (nils) on a quiet
-- record, which costs no call.
local function busy_fields(board, ...)
  if not busy then return end
  return unpack(redis.call('HMGET', board, ...))
end

-- Deletes the record's 'quiet' (see quiet_due), before a script sets 'dropping',
-- 'hidden', 'review', 'watch', 'rb_window', 'rm_member' or 'ctr_q', and the previous
-- release's 'bare', which it would trust after a rollback.
local function unquiet(board)
  redis.call('HDEL', board, 'quiet', 'bare')
end

-- Sets the record's 'quiet', when board_record found it could have it (quiet_due: the
-- caller checks, a call costing more than the check), and deletes the previous
-- release's 'bare'.
local function requiet(board)
  redis.call('HSET', board, 'quiet', '1')
  redis.call('HDEL', board, 'bare')
end

-- Sets `field` of the hash `key` to `value`, or deletes it when `value` is `none` (what
-- its absence means).
local function set_field(key, field, value, none)
  if value == none then return redis.call('HDEL', key, field) end
  return redis.call('HSET', key, field, value)
end

-- Whether a recompute's lease, ending at `until_ms` (a record's rb_until, or false),
-- still holds.
local function lease_held(until_ms)
  return until_ms ~= false and until_ms ~= nil and now_ms() < tonumber(until_ms)
end

-- `v`, an integer as a string, negated (as a string: Lua would print a large number in
-- floating-point notation, which HINCRBY and ZINCRBY refuse or round).
local function negate(v)
  if string.sub(v, 1, 1) == '-' then return string.sub(v, 2) end
  return '-' .. v
end
