-- watch_set.lua: set, change or clear a sum board's watched tops (lua/watch.lua).
--
-- KEYS[1]  board record          board_{b}
--
-- ARGV[1]  board version the caller expects
-- ARGV[2]  the watches, '<W>:<N> ...' (window seconds, top N), or '' to clear them
-- ARGV[3]  how many changes are kept and for how long, '<keep> <ms>', or '' for the
--          default (record field changes_kept, see record_changes)
--
-- Records what the change does to each watched top as changes caused by 'watch': the
-- first N of a window newly watched enter, those of a window no longer watched leave
-- (its top is then watched as the top 0), a changed N lets the difference enter or leave.
-- Idempotent: sent again, it records nothing more. Error "STALE ..." as write.lua.

local board = KEYS[1]
board_record(board, ARGV[1])
local spec, asked, gone = {}, {}, {}
for w, n in string.gmatch(ARGV[2], '(%d+):(%d+)') do
  spec[#spec + 1] = w .. ':' .. n
  asked[w] = true
end
for w in string.gmatch(watch_spec or '', '(%d+):%d+') do
  if not asked[w] then
    spec[#spec + 1] = w .. ':0'
    gone[#gone + 1] = w
  end
end
watch_spec = #spec > 0 and table.concat(spec, ' ')
record_changes(board, 'watch')
for _, w in ipairs(gone) do redis.call('HDEL', board .. ':watch', w, w .. ':bar') end
unquiet(board)
set_field(board, 'watch', ARGV[2], '')
set_field(board, 'changes_kept', ARGV[3], '')
return 1
