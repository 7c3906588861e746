-- epoch: the entry point that reads the epoch an operator's change bumps.
-- KEYS[1] = the epoch key, ARGV[1] = 'e'. Reply: the number, 0 when unset.

local function epoch(KEYS, ARGV)
  local key, mode = KEYS[1], ARGV[1]
  if #KEYS ~= 1 or mode ~= 'e' or string.sub(key, -5) ~= 'epoch' or string.find(key, '{', 1, true) then
    return bad('bad epoch read')
  end
  return tonumber(redis.call('GET', key)) or 0
end
