-- epoch: the entry points that read the epoch an operator's change bumps,
-- and bump it. epoch: KEYS[1] = the epoch key, ARGV[1] = 'e'. Reply: the
-- number, 0 when unset.

local function epoch(KEYS, ARGV)
  local key, mode = KEYS[1], ARGV[1]
  if #KEYS ~= 1 or mode ~= 'e' or string.sub(key, -5) ~= 'epoch' or string.find(key, '{', 1, true) then
    return bad('bad epoch read')
  end
  return tonumber(redis.call('GET', key)) or 0
end

-- bump increments the epoch key (KEYS[1], no ARGV): an operator's change,
-- by ratelimitctl, that every VM must see. Flagged allow-oom, so that it
-- runs on a Redis full under maxmemory, when an operator's reset matters
-- most: INCR of a key that holds an integer allocates nothing. It never
-- creates the key, which would add data past maxmemory, one key a call.
local function bump(KEYS, ARGV)
  local key = KEYS[1]
  if #KEYS ~= 1 or #ARGV ~= 0 or string.sub(key, -5) ~= 'epoch' or string.find(key, '{', 1, true) then
    return bad('bad epoch bump')
  end
  -- GET, not EXISTS: the operator's ACL user has GET and INCR.
  if not redis.call('GET', key) then return bad('no epoch to bump: the bump never creates one') end
  return redis.call('INCR', key)
end
