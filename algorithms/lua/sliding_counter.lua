-- Sliding counter: two fixed windows, weighted; O(1) memory per key.
-- For a limit l: l.a = L per window l.b = W (milliseconds). The estimate of
-- requests in the last W is prev * (W - e) / W + cur, e = time into the
-- current window. All arithmetic is scaled by W so it stays in exact
-- integers (L * W <= 2^50 is enforced).

-- counter_state reads the key's counts as of now: the current window's
-- index, the time e into it, its count and the previous window's, and the
-- microseconds past now's millisecond.
local function counter_state(key, now, w)
  local now_ms = math.floor(now / 1000)
  local idx = math.floor(now_ms / w)
  local e = now_ms - idx * w
  local st = redis.call('HMGET', key, 'w', 'c', 'p')
  local cur, prev = 0, 0
  local stored = tonumber(st[1])
  if stored == idx then
    cur, prev = tonumber(st[2]) or 0, tonumber(st[3]) or 0
  elseif stored == idx - 1 then
    prev = tonumber(st[2]) or 0
  end
  return idx, e, cur, prev, now - now_ms * 1000
end

-- check decides a request of cost n, reading only; when it allows a cost
-- above 0, l.idx, l.e, l.cur and l.prev are the window the commit stores.
local function counter_check(l, now, n)
  local limit, w = l.a, l.b
  local idx, e, cur, prev, sub = counter_state(l.key, now, w)
  local free = limit * w - prev * (w - e) - cur * w
  local after = cur
  local ok = n * w <= free and n > 0
  if ok then after = cur + n end
  local reset = 0
  if after > 0 then reset = 2 * w - e elseif prev > 0 then reset = w - e end
  if reset > 0 then reset = reset * 1000 - sub end
  if ok then
    l.allowed, l.remaining, l.retry, l.reset = true, math.floor(free / w) - n, -1, reset
    l.idx, l.e, l.cur, l.prev = idx, e, after, prev
    return
  end
  if n * w <= free then
    l.allowed, l.remaining, l.retry, l.reset = true, math.floor(free / w), -1, reset
    return
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
  l.allowed, l.remaining, l.retry, l.reset = false, math.max(0, math.floor(free / w)), d * 1000 - sub, reset
end

-- commit stores the window check found, kept while it can still count.
local function counter_commit(l, now)
  redis.call('HSET', l.key, 'w', l.idx, 'c', l.cur, 'p', l.prev)
  redis.call('PEXPIRE', l.key, 2 * l.b - l.e)
end

local sliding_counter = {check = counter_check, commit = counter_commit}
