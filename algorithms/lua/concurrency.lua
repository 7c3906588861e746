-- concurrency: requests in flight. Defines conc_check and conc_commit,
-- and for settle.lua conc_trim. a = L, the slots; b = D, the most a
-- slot is held (max_duration), in us. The key is a sorted set of the
-- slots held: member = the slot id the caller chose (its cost field, an
-- integer below 2^53), score = the slot's expiry, acquired at + D. A slot
-- leaves by its release (settle.lua) or once expired, so a release that
-- never comes (a proxy that died) frees it after D. A cost above 0
-- acquires that slot; 0 peeks.

-- conc_trim drops the expired slots and returns how many are held, and
-- how many expired ones remain (0 unless read_only, which drops none).
local function conc_trim(key, now)
  if read_only then
    local expired = redis.call('ZCOUNT', key, '-inf', now)
    return redis.call('ZCARD', key) - expired, expired
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key), 0
end

-- conc_check decides a request that takes one slot (n > 0) or none (a
-- peek). Reset is until the last slot expires, retry until enough of the
-- earliest do: upper bounds, since a release may come first. When it
-- allows a slot, it also returns the last expiry for conc_commit.
local function conc_check(key, limit, d, now, n)
  local used, expired = conc_trim(key, now)
  local taken = n > 0 and 1 or 0
  local last = 0
  if used > 0 then last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
  local reset = used > 0 and last - now or 0
  if used + taken <= limit then
    if taken == 1 then return true, limit - used - 1, -1, math.max(reset, d), last end
    return true, limit - used, -1, reset
  end
  local k = expired + used + taken - limit - 1
  local e = redis.call('ZRANGE', key, k, k, 'WITHSCORES')
  return false, math.max(0, limit - used), tonumber(e[2]) - now, reset
end

-- conc_commit adds slot n, expiring at now + D, and keeps the key until
-- its last slot expires.
local function conc_commit(key, _, d, now, n, last)
  redis.call('ZADD', key, now + d, string.format('%d', n))
  redis.call('PEXPIRE', key, math.ceil((math.max(now + d, last) - now) / 1000))
end
