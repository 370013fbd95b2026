-- prefix_move.lua: renames keys under another prefix (see `jobs/prefix_move.rs`), on a
-- single Redis only.
-- KEYS: old and new names, in pairs.
-- Renames each old key that still exists (an idempotency record may have expired since
-- the scan) to its new name, unless that is taken. Running it again is harmless.
-- Returns {keys moved, the pair (from 1) whose new name was taken, or 0}.
local moved = 0
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    if redis.call('RENAMENX', KEYS[i], KEYS[i + 1]) == 0 then
      return {moved, (i + 1) / 2}
    end
    moved = moved + 1
  end
end
return {moved, 0}
