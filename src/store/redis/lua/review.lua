-- review.lua: the review gate (docs/design.md, "Review gate"). A board whose record
-- sets 'review' K (review_rank) holds out of its public ranking every member nobody
-- reviewed (not in board_{b}:allowed) whose rank among the public members and itself
-- would be K or better in some window (on a dense board, its dense rank: the bar is the
-- K-th distinct public total, and the tallies follow each move). A held member is hidden
-- with the mark 'held' in board_{b}:hidden (counted by the record's 'hidden'), so
-- writes, retirement and reads treat it as hidden_members says. Every script that
-- changes a gated board's totals calls gate once it is done.

-- How a gated board tallies a member's totals it moves (move_totals): on a dense board
-- (its record's 'ties' `ties`), 'beside' and the retally of its values, retally_all
-- when it ranks every value (its 'rank' `rank` 'all': a max, min or latest board), else
-- retally; else nil.
local function gate_tallies(ties, rank)
  if ties ~= 'dense' then return nil end
  return 'beside', rank == 'all' and retally_all or retally
end

-- Applies the review gate of the board `board` (its record) after a change of its
-- totals (see the file's head). First, in each window, every unreviewed public member at
-- or over the bar is held, until none is (holding one lowers the bar); each hold is
-- appended to board_{b}:held. Then each held member that may have fallen under every bar
-- is let go: those whose totals changed (gate_changed), those the rise of a bar since the
-- last call (board_{b}:bars) passed, or with `all_held` every held member. Both leave
-- each bar as the K-th allowed public member's; the bars are kept for the next call.
local function gate(board, all_held)
  if not review_rank then return end
  -- Its helpers are made here, on a gated board's calls only (every local function of a
  -- script's source is a closure made anew on each call).
  -- How many entries board_{b}:held, the stream of the members the gate held (field m;
  -- the review webhook delivers them), keeps at least.
  local HELD_KEPT = 10000
  local bytes_before = tie_order()
  -- The totals of each window of the board whose record is `board`, smallest first, from
  -- the record's windows ('3600,86400'): stats_{b}, then stats_{b}_<W>.
  local function window_keys(board, windows)
    local prefix, tagged = string.match(board, '^(.-)board_({.*})$')
    local keys = {}
    for w in string.gmatch(windows, '%d+') do
      keys[#keys + 1] = prefix .. 'stats_' .. tagged .. (#keys == 0 and '' or '_' .. w)
    end
    return keys
  end

  -- The bar of a window's public `totals`: its K-th ranked member's total (and, with
  -- `position` ties, the member), or nil when fewer than K are ranked (`rule` as
  -- ranked_total says); on a dense board its K-th distinct total (`distinct`: the
  -- window's distinct totals, every one ranked).
  local function gate_bar(totals, k, position, rule, distinct)
    local kth = redis.call('ZREVRANGE', distinct or totals, k - 1, k - 1, 'WITHSCORES')
    if not kth[1] or not ranked_total(kth[2], rule) then return nil end
    if not position then return { tonumber(kth[2]) } end
    local greater = redis.call('ZCOUNT', totals, '(' .. kth[2], '+inf')
    local at = redis.call('ZRANGE', totals, kth[2], kth[2], 'BYSCORE', 'LIMIT', k - 1 - greater, 1)
    return { tonumber(kth[2]), at[1] }
  end

  -- Whether `member`, holding the ranked `total`, ranks at or before `bar` (none: every
  -- ranked member does).
  local function over_bar(bar, total, member)
    if not bar then return true end
    if total ~= bar[1] then return total > bar[1] end
    return not bar[2] or member == bar[2] or bytes_before(member, bar[2])
  end

  -- A bar as board_{b}:bars keeps it ('-' for none) and back.
  local function bar_text(bar)
    if not bar then return '-' end
    return string.format('%d', bar[1]) .. (bar[2] and ' ' .. bar[2] or '')
  end
  local function bar_of_text(text)
    if text == '-' then return nil end
    local total, member = string.match(text, '^(%S+) ?(.*)$')
    return { tonumber(total), member ~= '' and member or nil }
  end

  -- Of `members`, those not in the set `allowed` (SMISMEMBER, 1,000 at a time).
  local function unreviewed(allowed, members)
    local out = {}
    for from = 1, #members, 1000 do
      local to = math.min(from + 999, #members)
      local found = redis.call('SMISMEMBER', allowed, unpack(members, from, to))
      for x = from, to do
        if found[x - from + 1] == 0 then out[#out + 1] = members[x] end
      end
    end
    return out
  end

  local k = review_rank
  local info = redis.call('HMGET', board, 'windows', 'ties', 'rank')
  local keys = window_keys(board, info[1])
  local position, rule = info[2] == 'position', rank_rule(info[3])
  -- A dense board's tallies follow each move (move_totals), and its bar is the K-th of
  -- the distinct totals beside the totals.
  local tally, tallied = gate_tallies(info[2], info[3])
  local hidden, allowed, bars_key = board .. ':hidden', board .. ':allowed', board .. ':bars'
  local held_log = board .. ':held'
  local floor = rule and '-inf' or '(0'
  -- The bars kept by the last call (field <totals>), and on a shard of a sharded board
  -- the bars across its shards last published to it (<totals>:ext, gate_publish.lua).
  local fields = {}
  for j, totals in ipairs(keys) do
    fields[j], fields[#keys + j] = totals, totals .. ':ext'
  end
  local stored = redis.call('HMGET', bars_key, unpack(fields))
  local held, bars = 0, {}
  for j, totals in ipairs(keys) do
    local distinct = tally and string.gsub(totals, '^(.*)stats_({.*)$', '%1dense_%2')
    local published = bar_of_text(stored[#keys + j] or '-')
    while true do
      -- The higher of the shard's own bar and the one across the shards.
      local bar = gate_bar(totals, k, position, rule, distinct)
      if published and not (bar and over_bar(published, bar[1], bar[2] or '')) then
        bar = published
      end
      local top = redis.call('ZREVRANGEBYSCORE', totals, '+inf', bar and bar[1] or floor, 'WITHSCORES')
      local over = {}
      for x = 1, #top, 2 do
        if ranked_total(top[x + 1], rule) and over_bar(bar, tonumber(top[x + 1]), top[x]) then
          over[#over + 1] = top[x]
        end
      end
      local holding = unreviewed(allowed, over)
      if #holding == 0 then
        bars[j] = bar
        break
      end
      for _, member in ipairs(holding) do
        redis.call('HSET', hidden, member, 'held')
        move_totals(keys, member, true, tally, tallied)
        redis.call('XADD', held_log, 'MAXLEN', '~', HELD_KEPT, '*', 'm', member)
      end
      held = held + #holding
      hidden_members = hidden
    end
  end
  local old = stored
  local candidates = {}
  if all_held or not old[1] then
    local marks = redis.call('HGETALL', hidden)
    for x = 1, #marks, 2 do
      if marks[x + 1] == 'held' then candidates[marks[x]] = true end
    end
  else
    for member in pairs(gate_changed) do candidates[member] = true end
    for j, totals in ipairs(keys) do
      local was, now = bar_of_text(old[j] or '-'), bars[j]
      -- The bar rose: the held members between the old bar and the new one.
      if now and not (was and over_bar(now, was[1], was[2] or '')) then
        local from = was and was[1] or floor
        local passed = redis.call('ZRANGEBYSCORE', totals .. ':hidden', from, now[1])
        for _, member in ipairs(passed) do candidates[member] = true end
      end
    end
  end
  local released = 0
  for member in pairs(candidates) do
    if redis.call('HGET', hidden, member) == 'held' then
      local keep = false
      for j, totals in ipairs(keys) do
        local v = redis.call('ZSCORE', totals .. ':hidden', member)
        if v and ranked_total(v, rule) and over_bar(bars[j], tonumber(v), member) then
          keep = true
          break
        end
      end
      if not keep then
        redis.call('HDEL', hidden, member)
        move_totals(keys, member, false, tally, tallied)
        released = released + 1
      end
    end
  end
  if held ~= released then
    unquiet(board)
    redis.call('HINCRBY', board, 'hidden', held - released)
  end
  local texts = {}
  for j, totals in ipairs(keys) do
    local text = bar_text(bars[j])
    if old[j] ~= text then
      texts[#texts + 1] = totals
      texts[#texts + 1] = text
    end
  end
  if #texts > 0 then redis.call('HSET', bars_key, unpack(texts)) end
  gate_changed = {}
end
