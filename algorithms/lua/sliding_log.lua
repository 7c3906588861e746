-- Sliding log: an exact sliding window over a sorted set of admission times.
-- For a limit l: l.a = L requests per window l.b = W (microseconds).
-- Score = admission time in us. An entry admitted at s counts while
-- s > now - W.

-- check decides a request of cost n. It trims the entries that left the
-- window, and charges nothing.
local function log_check(l, now, n)
  local key, limit, window = l.key, l.a, l.b
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  local used = redis.call('ZCARD', key)
  if used + n <= limit and n > 0 then
    l.allowed, l.remaining, l.retry, l.reset = true, limit - used - n, -1, window
    return
  end
  local reset = 0
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then reset = tonumber(last[2]) + window - now end
  if used + n <= limit then
    l.allowed, l.remaining, l.retry, l.reset = true, limit - used, -1, reset
    return
  end
  -- The (used + n - limit) oldest entries must leave the window first.
  local retry = window
  local k = used + n - limit
  if k <= used then
    local e = redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')
    retry = tonumber(e[2]) + window - now
  end
  l.allowed, l.remaining, l.retry, l.reset = false, limit - used, retry, reset
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

-- commit adds l.cost entries at now, and keeps the key for one window.
local function log_commit(l, now)
  local key, n = l.key, l.cost
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
  redis.call('PEXPIRE', key, math.ceil(l.b / 1000))
end

local sliding_log = {check = log_check, commit = log_commit}
