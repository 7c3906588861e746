-- sliding_counter: two fixed windows, weighted; O(1) memory per key.
-- Defines counter_check and counter_commit, and for settle.lua
-- counter_window and counter_counts.
-- a = L, the requests allowed per window of b = W milliseconds. The
-- estimate of requests in the last W is prev * (W - e) / W + cur, e = time
-- into the current window. All arithmetic is scaled by W so it stays in
-- exact integers (L * W <= 2^50 is enforced). A settle may leave the
-- counts above L, a debt: the formulas below still hold.

-- counter_window places now: the current window's index, the time e into
-- it (ms), and the microseconds past now's millisecond.
local function counter_window(now, w)
  local now_ms = math.floor(now / 1000)
  local idx = math.floor(now_ms / w)
  return idx, now_ms - idx * w, now - now_ms * 1000
end

-- counter_counts reads the counts of the current window idx and the one
-- before it; a window the key does not hold counts 0.
local function counter_counts(key, idx)
  local st = redis.call('HMGET', key, 'w', 'c', 'p')
  local stored = tonumber(st[1])
  if stored == idx then
    return tonumber(st[2]) or 0, tonumber(st[3]) or 0
  elseif stored == idx - 1 then
    return 0, tonumber(st[2]) or 0
  end
  return 0, 0
end

-- counter_check decides a request of cost n, reading only; when it allows
-- a cost above 0, it also returns the current and previous windows' counts
-- its commit stores.
local function counter_check(key, limit, w, now, n)
  local idx, e, sub = counter_window(now, w)
  local cur, prev = counter_counts(key, idx)
  local free = limit * w - prev * (w - e) - cur * w
  local after = cur
  local ok = n * w <= free and n > 0
  if ok then after = cur + n end
  local reset = 0
  if after > 0 then reset = 2 * w - e elseif prev > 0 then reset = w - e end
  if reset > 0 then reset = reset * 1000 - sub end
  if ok then
    return true, math.floor(free / w) - n, -1, reset, after, prev
  end
  if n * w <= free then
    return true, math.floor(free / w), -1, reset
  end
  local d
  if cur + n <= limit then
    d = w - math.floor((limit - cur - n) * w / prev) - e
  elseif n <= limit then
    local wait = w - math.floor((limit - n) * w / cur)
    if wait < 0 then wait = 0 end
    d = w - e + wait
  else
    d = 2 * w - e
  end
  return false, math.max(0, math.floor(free / w)), d * 1000 - sub, reset
end

-- counter_commit stores the window check found, kept while it can still
-- count. Check and commit see one now, so they place it alike.
local function counter_commit(key, _, w, now, _, cur, prev)
  local idx, e = counter_window(now, w)
  redis.call('HSET', key, 'w', idx, 'c', cur, 'p', prev)
  redis.call('PEXPIRE', key, 2 * w - e)
end
