-- throttle: when a decide call's throttled requests go on. Defines
-- throttle_time.
-- A throttle's funnels decide as of the time the request conforms to all
-- of them (as a request arriving then would), when that is within its max
-- delay: proceed_at, the latest such time of the call's throttles. Each
-- funnel is then charged as of proceed_at, and the request is to wait
-- until then. A throttle whose time is beyond its max delay decides now,
-- and denies. The call's other funnels decide now, and are charged as of
-- proceed_at too (decide.lua).

-- throttle_time returns proceed_at (now when no throttle holds the
-- call), and marks late the funnels that decide as of proceed_at.
local function throttle_time(limits, choices, now)
  local proceed_at = now
  for ci = 1, #choices do
    local c = choices[ci]
    if c.max_delay then
      local last = c.first + c.count - 1
      local conform = now
      for i = c.first, last do
        local l = limits[i]
        if l.algorithm == 'f' and l.a and l.b then
          local tat = tonumber(redis.call('GET', l.key)) or now
          conform = math.max(conform, math.max(tat, now) + (c.cost - l.a) * l.b)
        end
      end
      if conform - now <= c.max_delay then
        proceed_at = math.max(proceed_at, conform)
        for i = c.first, last do limits[i].late = limits[i].algorithm == 'f' end
      end
    end
  end
  return proceed_at
end
