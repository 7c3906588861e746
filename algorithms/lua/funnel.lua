-- Funnel: a leaky bucket computed as GCRA, with redis-cell CL.THROTTLE semantics.
-- For a limit l: l.a = burst capacity B, l.b = emission interval T in
-- microseconds (period / rate). The key holds the theoretical arrival time
-- (TAT) in microseconds.

-- check decides a request of cost n, reading only; when it allows, l.tat
-- is the TAT the commit stores.
local function funnel_check(l, now, n)
  local t = l.b
  local tau = l.a * t
  local tat = tonumber(redis.call('GET', l.key)) or now
  if tat < now then tat = now end
  local new_tat = tat + n * t
  local diff = now - (new_tat - tau)
  if diff < 0 then
    l.allowed, l.remaining, l.retry, l.reset = false, math.floor((now - tat + tau) / t), -diff, tat - now
    return
  end
  l.allowed, l.remaining, l.retry, l.reset, l.tat = true, math.floor(diff / t), -1, new_tat - now, new_tat
end

-- commit stores the new TAT, kept until the funnel is empty again.
local function funnel_commit(l, now)
  local tat = l.tat
  redis.call('SET', l.key, tat, 'PX', math.ceil((tat - now) / 1000))
end

local funnel = {check = funnel_check, commit = funnel_commit}
