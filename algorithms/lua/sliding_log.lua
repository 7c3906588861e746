-- Sliding log: an exact sliding window over a sorted set of admission times.
-- a = L, the requests allowed per window of b = W microseconds.
-- Score = admission time in us. An entry admitted at s counts while
-- s > now - W.

-- log_check decides a request of cost n. It trims the entries that left
-- the window, and charges nothing; its commit needs nothing more.
local function log_check(key, limit, window, now, n)
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
-- share one microsecond. Entries at one score are trimmed together, so the
-- ordinals in use at a score are always 0..c-1: a ZADD that adds fewer
-- members than asked met earlier ones, and the rest go after ZCOUNT.
-- (Numbers reach Redis as integers; Lua's own tostring would not.)
local function log_add(key, now, from, to)
  local args, added = {}, 0
  for i = from, to do
    args[#args + 1] = now
    if i == 0 then args[#args + 1] = now else args[#args + 1] = string.format('%d.%d', now, i) end
    if #args >= 200 or i == to then
      added = added + redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  return added
end

-- log_commit adds n entries at now, and keeps the key for one window.
local function log_commit(key, _, window, now, n)
  local added
  if n == 1 then
    added = redis.call('ZADD', key, now, now)
  else
    added = log_add(key, now, 0, n - 1)
  end
  if added < n then
    local c = redis.call('ZCOUNT', key, now, now)
    log_add(key, now, c, c + n - added - 1)
  end
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end
