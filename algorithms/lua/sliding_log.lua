-- Sliding log: an exact sliding window over a sorted set of admission times.
-- limit = L requests per window W (microseconds). Score = admission time in us.
-- An entry admitted at s counts while s > now - W.
local function log_check(key, now, limit, window, n)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local used = redis.call('ZCARD', key)
  if used + n <= limit and n > 0 then
    return true, limit - used - n, -1, window
  end
  local reset = 0
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then reset = tonumber(last[2]) + window - now end
  if used + n <= limit then
    return true, limit - used, -1, reset
  end
  -- The (used + n - limit) oldest entries must leave the window first.
  local retry = window
  local k = used + n - limit
  if k <= used then
    local e = redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')
    retry = tonumber(e[2]) + window - now
  end
  return false, limit - used, retry, reset
end

-- Members are the admission time in us, suffixed by an ordinal when several
-- share one microsecond; entries at one score are trimmed together, so the
-- ordinals in use are always 0..c-1.
local function log_commit(key, now, limit, window, n)
  local stamp = string.format('%d', now)
  local c = redis.call('ZCOUNT', key, now, now)
  local args = {}
  for i = c, c + n - 1 do
    local member = stamp
    if i > 0 then member = stamp .. '.' .. i end
    args[#args + 1] = stamp
    args[#args + 1] = member
    if #args >= 200 then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  if #args > 0 then redis.call('ZADD', key, unpack(args)) end
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end
