-- lease: a choice that takes more than its cost when the whole decide call
-- is admitted: the most units, up to its most, that every picked limit
-- still admits; never for a concurrency limit, nor for a held call.
-- Defines grant_leases.

-- grant_leases sets each lease's grant, and checks each of its limits
-- again at the larger cost, which then fits, for the commit.
local function grant_leases(limits, choices, now, proceed_at)
  for ci = 1, #choices do
    local c = choices[ci]
    if c.most then
      local last = c.first + c.count - 1
      local extra = proceed_at > now and 0 or c.most - c.cost -- a held call takes no batch
      for i = c.first, last do
        local l = limits[i]
        if l.algorithm == 'k' then extra = 0 end
        extra = math.min(extra, l.remaining)
      end
      if extra > 0 then
        for i = c.first, last do
          local l = limits[i]
          l.cost = l.cost + extra
          local _, remaining, retry, reset, state1, state2 = checks[l.algorithm](l.key, l.a, l.b, now, l.cost)
          l.remaining, l.retry, l.reset, l.state1, l.state2 = remaining, retry, reset, state1, state2
        end
      end
      c.grant = c.cost + math.max(extra, 0)
    end
  end
end
