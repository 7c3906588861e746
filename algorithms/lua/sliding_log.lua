-- sliding_log: an exact sliding window over a sorted set of admissions.
-- Defines log_check and log_commit, and for settle.lua log_weight,
-- log_trim, log_add and log_expire.
-- a = L, the units allowed per window of b = W microseconds.
-- One member per admission: score = its time in us, member '<us>' or
-- '<us>.<k>' (k keeps it unique), then ':<weight>' unless the weight is 1.
-- An entry admitted at s counts while s > now - W; the k-th oldest unit is
-- in the entry where the weights, summed oldest first, reach k.
-- Once a weight is not 1, member 's' keeps the total as its score, -total
-- (<= 0, below every entry). Without it every weight is 1 and the total is
-- ZCARD: unit-cost logs, and keys the one-member-per-unit script wrote.

local function log_weight(member)
  local c = string.find(member, ':', 1, true)
  if c then return tonumber(string.sub(member, c + 1)) end
  return 1
end

-- log_trim drops the entries that left the window; it returns the total,
-- whether member 's' holds it, and how many entries that left the window
-- remain (0 unless read_only, which drops none).
local function log_trim(key, window, now)
  local s = redis.call('ZSCORE', key, 's')
  if not s then
    if read_only then
      local stale = redis.call('ZCOUNT', key, '-inf', now - window)
      return redis.call('ZCARD', key) - stale, false, stale
    end
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    return redis.call('ZCARD', key), false, 0
  end
  local total = -tonumber(s)
  local gone = redis.call('ZRANGEBYSCORE', key, '(0', now - window)
  if #gone > 0 then
    for i = 1, #gone do total = total - log_weight(gone[i]) end
    if read_only then return total, true, #gone end
    redis.call('ZREMRANGEBYSCORE', key, '(0', now - window)
    redis.call('ZADD', key, -total, 's')
  end
  return total, true, 0
end

-- log_check decides a request of cost n. It trims the entries that left
-- the window, and charges nothing; its commit needs the total and whether
-- 's' holds it.
local function log_check(key, limit, window, now, n)
  local used, weighted, stale = log_trim(key, window, now)
  if used + n <= limit and n > 0 then
    return true, limit - used - n, -1, window, used, weighted
  end
  local reset = 0
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if used > 0 and last[2] and last[1] ~= 's' then reset = tonumber(last[2]) + window - now end
  if used + n <= limit then
    return true, limit - used, -1, reset
  end
  -- The k oldest units must leave the window first.
  local retry = window
  local k = used + n - limit
  if k <= used and not weighted then
    local e = redis.call('ZRANGE', key, stale + k - 1, stale + k - 1, 'WITHSCORES')
    retry = tonumber(e[2]) + window - now
  elseif k <= used then
    local from = 1 + stale -- past 's'
    while k > 0 do
      local e = redis.call('ZRANGE', key, from, from + 31, 'WITHSCORES')
      if #e == 0 then break end
      for i = 1, #e, 2 do
        k = k - log_weight(e[i])
        if k <= 0 then retry = tonumber(e[i + 1]) + window - now break end
      end
      from = from + 32
    end
  end
  return false, math.max(0, limit - used), retry, reset
end

-- log_add adds an entry of weight w at score at, under a member no other
-- has. (Numbers reach Redis as integers; Lua's own tostring would not.)
local function log_add(key, at, w)
  local tail = w == 1 and '' or string.format(':%d', w)
  if redis.call('ZADD', key, at, string.format('%d', at) .. tail) == 1 then return end
  local k = redis.call('ZCOUNT', key, at, at)
  while redis.call('ZADD', key, at, string.format('%d.%d', at, k) .. tail) == 0 do k = k + 1 end
end

-- log_expire keeps the key for at least one window: never less than it
-- had, since the tiers sharing a key may have longer windows.
local function log_expire(key, window)
  local ms = math.ceil(window / 1000)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end

-- log_commit adds one entry of weight n at now, keeps the total in 's'
-- once a weight is not 1, and keeps the key for one window.
local function log_commit(key, _, window, now, n, used, weighted)
  log_add(key, now, n)
  if weighted or n ~= 1 then redis.call('ZADD', key, -(used + n), 's') end
  log_expire(key, window)
end
