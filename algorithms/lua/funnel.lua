-- funnel: a leaky bucket computed as GCRA, with redis-cell CL.THROTTLE
-- semantics. Defines funnel_check and funnel_commit.
-- a = burst capacity B, b = emission interval T in microseconds
-- (period / rate). The key holds the theoretical arrival time (TAT) in
-- microseconds. A settle may push the TAT past now + tau: a debt, which
-- denies every request until it drains.

-- funnel_check decides a request of cost n, reading only; when it allows,
-- it also returns the TAT funnel_commit stores.
local function funnel_check(key, burst, interval, now, n)
  local tau = burst * interval
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + n * interval
  local diff = now - (new_tat - tau)
  if diff < 0 then
    return false, math.max(0, math.floor((now - tat + tau) / interval)), -diff, tat - now
  end
  return true, math.floor(diff / interval), -1, new_tat - now, new_tat
end

-- funnel_commit stores the new TAT, kept until the funnel is empty again.
local function funnel_commit(key, _, _, now, _, tat)
  redis.call('SET', key, tat, 'PX', math.ceil((tat - now) / 1000))
end
