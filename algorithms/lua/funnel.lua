-- Funnel: a leaky bucket computed as GCRA, with redis-cell CL.THROTTLE semantics.
-- cap = burst capacity B, t = emission interval T in microseconds (period / rate).
-- The key holds the theoretical arrival time (TAT) in microseconds.
local function funnel_check(key, now, cap, t, n)
  local tau = cap * t
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + n * t
  local diff = now - (new_tat - tau)
  if diff < 0 then
    return false, math.floor((now - tat + tau) / t), -diff, tat - now
  end
  return true, math.floor(diff / t), -1, new_tat - now, new_tat
end

local function funnel_commit(key, now, cap, t, n, new_tat)
  if n == 0 then return end
  redis.call('SET', key, new_tat, 'PX', math.ceil((new_tat - now) / 1000))
end
