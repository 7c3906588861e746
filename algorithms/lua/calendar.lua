-- calendar: a fixed window that is a calendar period (an hour, day, week
-- or month of local time in a time zone). Defines calendar_period,
-- limit_b, calendar_check, calendar_commit and calendar_settle.
-- a = L, the units allowed per period. The wire's b is "T0:T1:T2:T3", in
-- Unix seconds: the bounds of three consecutive periods around the
-- proxy's clock, which knows the zone's rules; Redis's clock picks the
-- one it is in, so a proxy's clock may be up to a period off. Once
-- picked, b is the period's end (us). The key holds the period's end
-- (e) and the units charged in it (c); another end counts 0.

-- calendar_period returns the start and end (us) of the period of raw's
-- bounds that holds now, or nil when none does or raw is malformed.
local function calendar_period(raw, now)
  if type(raw) ~= 'string' or #raw > 64 then return nil end
  local t0, t1, t2, t3 = string.match(raw, '^(%d+):(%d+):(%d+):(%d+)$')
  if not t0 then return nil end
  t0, t1, t2, t3 = tonumber(t0) * 1000000, tonumber(t1) * 1000000, tonumber(t2) * 1000000, tonumber(t3) * 1000000
  if not (t0 < t1 and t1 < t2 and t2 < t3 and t3 <= max_number) or now < t0 or now >= t3 then return nil end
  if now < t1 then return t0, t1 elseif now < t2 then return t1, t2 end
  return t2, t3
end

-- limit_b is a limit's b from its argument raw: a number, but for a
-- calendar limit ('p') its period's end as of now (nil when malformed,
-- or when Redis's clock is in none of its periods).
local function limit_b(algorithm, raw, now)
  if algorithm == 'p' then
    local _, e = calendar_period(raw, now)
    return e
  end
  return tonumber(raw)
end

-- calendar_used is what the period ending at e has charged.
local function calendar_used(key, e)
  local st = redis.call('HMGET', key, 'e', 'c')
  if tonumber(st[1]) == e then return tonumber(st[2]) or 0 end
  return 0
end

-- calendar_check decides a request of cost n, reading only; when it
-- allows a cost above 0, it also returns the count its commit stores. A
-- settle may leave the count above L, a debt that denies until the end.
local function calendar_check(key, limit, e, now, n)
  local used = calendar_used(key, e)
  if used + n <= limit then
    local after = used
    if n > 0 then after = used + n end
    local reset = 0
    if after > 0 then reset = e - now end
    return true, limit - after, -1, reset, after
  end
  return false, math.max(0, limit - used), e - now, e - now
end

-- calendar_commit stores the count, kept a second past the period's end.
local function calendar_commit(key, _, e, now, _, after)
  redis.call('HSET', key, 'e', e, 'c', after)
  redis.call('PEXPIRE', key, math.ceil((e - now) / 1000) + 1000)
end

-- The admission's period, while current, moves by d, never below 0; once
-- it has ended, a charge beyond the reservation is charged to the period
-- now, and a refund is nothing.
local function calendar_settle(key, limit, raw, now, at, reserved, cost)
  local s, e = calendar_period(raw, now)
  local used = calendar_used(key, e)
  local d = cost - reserved
  if reserved > 0 and at < s and d < 0 then d = 0 end
  d = math.max(-used, d)
  if d ~= 0 then calendar_commit(key, limit, e, now, 0, used + d) end
  return d, limit - used - d
end
