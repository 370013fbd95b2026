-- watch.lua: watched tops (docs/design.md, "Rank changes"). A sum board whose record
-- sets 'watch' ('<W>:<N> ...': window seconds and N, see watch_spec) records who entered,
-- left or moved in the first N members of each watched window's public ranking, in the
-- same atomic step as the change that caused it, appending them to the stream
-- board_{b}:changes. The first N as last recorded are kept in the hash board_{b}:watch:
-- field <W> their list (cmsgpack: member, rank, total, ...), field <W>:bar the N-th
-- total when N are ranked. The record's 'changes_kept' ('<keep> <ms>') caps the stream.
-- Every script that changes a watched board's public totals
-- calls record_changes once it is done (a chunked retirement: its last chunk).

-- Records the changes of each watched top of the board `board` (its record) since the
-- last call, caused by `cause` ('write', 'retire', ...; the caller's cause when it gave
-- one), at `at` (unix ms; nil: the caller's now, else the server's).
-- `high`, when given (a write that knows every public total it changed), maps a window's
-- seconds to the highest of those totals before or after: a window it leaves out, or
-- whose totals all stayed under its bar, kept its top N (each member above the bar is
-- listed, and a member under it before and after stayed out), so it is not read.
local function record_changes(board, cause, high, at)
  if not watch_spec then return end
  cause = caller_cause or cause
  -- Its helpers are made here, on a watched board's calls only (every local function of
  -- a script's source is a closure made anew on each call).
  local PASSED = 10
  local state, log = board .. ':watch', board .. ':changes'
  -- From the record, read when a window is (first, the smallest window's seconds).
  local first, ties, rule, kept, kept_ms

  -- The first n ranked members of `totals` as a flat list member, rank, total, ...:
  -- highest total first, equal ones by member ascending (ZREVRANGE lists them
  -- descending: a group is reversed, and one that goes on past n is read by score from
  -- its start), ranks by the board's ties. Also how many there are.
  local function top_of(totals, n)
    local raw = redis.call('ZREVRANGE', totals, 0, n, 'WITHSCORES')
    local count = 0
    while count < #raw / 2 and ranked_total(raw[2 * count + 2], rule) do count = count + 1 end
    local after = count > n and raw[2 * n + 2]
    count = math.min(count, n)
    local list, x, distinct = {}, 1, 1
    while x <= count do
      local score, y = raw[2 * x], x
      while y < count and raw[2 * y + 2] == score do y = y + 1 end
      local group = {}
      if y == count and after == score then
        group = redis.call('ZRANGEBYSCORE', totals, score, score, 'LIMIT', 0, y - x + 1)
      else
        for k = y, x, -1 do group[#group + 1] = raw[2 * k - 1] end
      end
      for k, member in ipairs(group) do
        local rank = x
        if ties == 'position' then rank = x + k - 1 elseif ties == 'dense' then rank = distinct end
        local l = #list
        list[l + 1], list[l + 2], list[l + 3] = member, rank, tonumber(score)
      end
      distinct = distinct + 1
      x = y + 1
    end
    return list, count
  end

  -- Appends one change of window `w` to the stream (fields t m w s c a, then r, f, p
  -- when given; each passed member as <bytes>:<member>, a member may hold any character).
  local function emit(w, kind, member, score, rank, from, passed)
    local entry = { 't', kind, 'm', member, 'w', w, 's', string.format('%d', score), 'c', cause,
      'a', string.format('%d', at) }
    local function add(field, value)
      local e = #entry
      entry[e + 1], entry[e + 2] = field, value
    end
    if rank then add('r', rank) end
    if from then add('f', from) end
    if passed and #passed > 0 then
      local text = {}
      for _, p in ipairs(passed) do text[#text + 1] = #p .. ':' .. p end
      add('p', table.concat(text))
    end
    redis.call('XADD', log, '*', unpack(entry))
  end

  -- Appends the changes from `old` to `list` (flat lists, see top_of) of window `w`, in
  -- the order diff_top (src/domain/watch.rs) gives: those that left, in the old order,
  -- then each member now listed that entered or moved.
  local function record_diff(w, totals, old, list)
    local before, now_in = {}, {}
    for z = 1, #old, 3 do before[old[z]] = old[z + 1] end
    for z = 1, #list, 3 do now_in[list[z]] = list[z + 1] end
    for z = 1, #old, 3 do
      if not now_in[old[z]] then
        emit(w, 'left', old[z], tonumber(redis.call('ZSCORE', totals, old[z]) or '0'), nil, old[z + 1])
      end
    end
    for z = 1, #list, 3 do
      local member, rank, score = list[z], list[z + 1], list[z + 2]
      local was = before[member]
      if not was then
        emit(w, 'entered', member, score, rank)
      elseif was ~= rank then
        -- Up: those it passed, in the old order; down: those that passed it.
        local up = rank < was
        local listed, other = up and old or list, up and now_in or before
        local mine, theirs = up and was or rank, up and rank or was
        local passed = {}
        for q = 1, #listed, 3 do
          if #passed == PASSED then break end
          if listed[q + 1] < mine and (other[listed[q]] or math.huge) > theirs then
            passed[#passed + 1] = listed[q]
          end
        end
        emit(w, 'moved', member, score, rank, was, passed)
      end
    end
  end

  -- Keeps the newest `kept` changes, none older than `kept_ms`: the newest id trimmed
  -- goes to field 'trimmed' (changes_read.lua refuses a read after an older one), then
  -- every entry through it.
  local function trim(now)
    local function cut_through(last)
      redis.call('HSET', state, 'trimmed', last)
      local ms, seq = string.match(last, '^(%d+)-(%d+)$')
      redis.call('XTRIM', log, 'MINID', ms .. '-' .. string.format('%d', tonumber(seq) + 1))
    end
    local excess = redis.call('XLEN', log) - tonumber(kept)
    if excess > 0 then
      local cut = redis.call('XRANGE', log, '-', '+', 'COUNT', excess)
      cut_through(cut[#cut][1])
    end
    local expired = string.format('%d', now - tonumber(kept_ms))
    local newest = redis.call('XREVRANGE', log, '(' .. expired, '-', 'COUNT', 1)
    if newest[1] then cut_through(newest[1][1]) end
  end

  local watched, fields = {}, {}
  for w, n in string.gmatch(watch_spec, '(%d+):(%d+)') do
    watched[#watched + 1] = { w, tonumber(n) }
    fields[#fields + 1] = w
    fields[#fields + 1] = w .. ':bar'
  end
  local stored = redis.call('HMGET', state, unpack(fields))
  local prefix, tagged = string.match(board, '^(.-)board_({.*})$')
  local now
  for i, watch_of in ipairs(watched) do
    local w, n = watch_of[1], watch_of[2]
    local bar = tonumber(stored[2 * i])
    if not (high and (not high[w] or (bar and high[w] < bar))) then
      if not first then
        local info = redis.call('HMGET', board, 'windows', 'ties', 'rank', 'changes_kept')
        first, ties, rule = string.match(info[1], '%d+'), info[2], info[3] == 'nonzero'
        kept, kept_ms = string.match(info[4] or '10000 604800000', '^(%d+) (%d+)$')
      end
      local totals = prefix .. 'stats_' .. tagged .. (w == first and '' or '_' .. w)
      local list, count = top_of(totals, n)
      local packed = cmsgpack.pack(list)
      if packed ~= stored[2 * i - 1] then
        local old = stored[2 * i - 1] and cmsgpack.unpack(stored[2 * i - 1]) or {}
        now = now or now_ms()
        at = at or caller_now or now
        record_diff(w, totals, old, list)
        redis.call('HSET', state, w, packed)
      end
      -- The bar, which a changed N moves with the same members listed.
      local now_bar = n > 0 and count == n and list[#list] or nil
      if now_bar ~= bar then
        if now_bar then
          redis.call('HSET', state, w .. ':bar', string.format('%d', now_bar))
        else
          redis.call('HDEL', state, w .. ':bar')
        end
      end
    end
  end
  if now then trim(now) end
end
