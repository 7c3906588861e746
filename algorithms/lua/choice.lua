-- choice: a decide call in which Redis picks the limits of some rule keys.
-- Defines the flags, has_flag, read_choices and append_choices.
-- ARGV[1] = 'g', ARGV[2] = nb, ARGV[3] = np: np plain limits follow
-- (KEYS[nb+1..nb+np], four values each as in decide.lua), then choices to
-- the end. A choice is 'x', flags, m, cost, ntiers, then a slot id when
-- F_SLOT, its most units when F_LEASE, its max delay in microseconds
-- when F_THROTTLE; then per tier: its name, its count of limits, and per
-- limit algorithm, a, b. Its KEYS: the tier key when F_TIER, the override
-- key when F_OVERRIDE, then the state keys of its m positions.
-- Every picked limit takes cost, but a concurrency limit takes the slot
-- id when there is one. A lease takes more than cost when the whole call
-- is admitted (lease.lua); a throttle lets a request its funnels deny now
-- through later (throttle.lua).
-- Redis picks the override when its key holds one ("algorithm:a:b,...",
-- 1 to m limits), else the tier the tier key names, else tier 1, the
-- default. The picked limits decide on the positions' keys in order.
-- Reply, after decide.lua's header and 5 values per plain limit: per
-- choice, the pick (0 the override, else the tier's number), for a lease
-- the units it took (0 when denied), for a throttle the call's delay in
-- microseconds (0 when denied), then per position: allowed, a, remaining,
-- retry_after_us, reset_after_us, algorithm (1 l, 2 c, 3 f, 4 k, 5 p) and
-- b (a calendar limit's: its period's end, us),
-- or 1, 0, 0, -1, 0, 0, 0 when the picked limits leave the position unused.

local F_TIER, F_OVERRIDE, F_SLOT, F_LEASE, F_THROTTLE = 1, 2, 4, 8, 16

local function has_flag(flags, flag)
  return bit.band(flags, flag) ~= 0
end

-- new_choice is one choice's record: its pick, m positions, the index of
-- its first picked limit and their count, cost, the lease's most units
-- (or nil) and grant (set once admitted), the throttle's max delay (or nil).
local function new_choice(pick, positions, first, count, cost, most, max_delay)
  return {pick = pick, positions = positions, first = first, count = count, cost = cost,
    most = most, grant = nil, max_delay = max_delay}
end

-- pick_override appends to limits the override's limits for a choice's
-- keys from KEYS[k] on, and returns their count; 0, appending nothing,
-- when override is not one this code wrote. A calendar limit's override
-- ("p:L:unit") sets L only: its period is that of the default tier's
-- limit at its position, whose arguments start at ARGV[t] (its count),
-- and which must be a calendar limit too.
local function pick_override(limits, override, KEYS, ARGV, t, k, m, cost, slot, now)
  local first, count = #limits + 1, 0
  for code, a, b in string.gmatch(override, '([lcfkp]):(%d+):(%d+)') do
    count = count + 1
    local bv = tonumber(b)
    if code == 'p' then
      local q = t + 3 * count - 2 -- the default tier's limit at this position
      bv = nil
      if count <= (tonumber(ARGV[t]) or 0) and ARGV[q] == 'p' then bv = limit_b('p', ARGV[q + 2], now) end
    end
    if count > m or tonumber(a) < 1 or not bv or bv < 1 then
      for i = #limits, first, -1 do limits[i] = nil end
      return 0
    end
    limits[first + count - 1] = new_limit(KEYS[k + count - 1], code, tonumber(a), bv, code == 'k' and slot or cost)
  end
  return count
end

-- read_choices appends the choices from ARGV[j] on to choices, and their
-- picked limits to limits. KEYS[k] is the first choice's first key. It
-- returns nil, or an error reply.
local function read_choices(limits, choices, KEYS, ARGV, j, k, now)
  while j <= #ARGV do
    local flags, m, cost, ntiers = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4])
    if ARGV[j] ~= 'x' or not whole(flags, 0) or flags > 31 or not whole(m, 1) or not whole(cost, -1)
        or not whole(ntiers, 1) then
      return bad('bad choice at argument ' .. j)
    end
    local tier_name, override, slot, most, max_delay = nil, nil, cost, nil, nil
    if has_flag(flags, F_TIER) then
      if not has_role(KEYS[k], ':tier') then return role_error(k) end
      tier_name = redis.call('GET', KEYS[k]); k = k + 1
    end
    if has_flag(flags, F_OVERRIDE) then
      if not has_role(KEYS[k], ':override') then return role_error(k) end
      override = redis.call('GET', KEYS[k]); k = k + 1
    end
    if has_flag(flags, F_SLOT) then
      slot = tonumber(ARGV[j + 5])
      if not whole(slot, 1) then return bad('bad slot at argument ' .. (j + 5)) end
      j = j + 1
    end
    if has_flag(flags, F_LEASE) then
      most = tonumber(ARGV[j + 5])
      if not whole(most, 1) or most < cost or cost < 1 then return bad('bad lease at argument ' .. (j + 5)) end
      j = j + 1
    end
    if has_flag(flags, F_THROTTLE) then
      max_delay = tonumber(ARGV[j + 5])
      if not whole(max_delay, 0) or cost < 1 or most then
        return bad('bad throttle at argument ' .. (j + 5))
      end
      j = j + 1
    end
    if k + m - 1 > #KEYS then
      return bad('bad choice at argument ' .. j)
    end
    local first, pick, count = #limits + 1, 1, 0
    if override then
      count = pick_override(limits, override, KEYS, ARGV, j + 6, k, m, cost, slot, now)
      if count > 0 then pick = 0 end
    end
    j = j + 5
    local tier_arg = j -- the picked tier's first argument
    for tier = 1, ntiers do
      local c = tonumber(ARGV[j + 1])
      if not whole(c, 1) or c > m then
        return bad('bad tier ' .. tier .. ' of the choice')
      end
      if pick ~= 0 and tier > 1 and ARGV[j] == tier_name then pick, tier_arg = tier, j end
      j = j + 2 + 3 * c
    end
    if pick ~= 0 then
      count = tonumber(ARGV[tier_arg + 1])
      for p = 1, count do
        local q = tier_arg + 3 * p - 1
        limits[first + p - 1] = new_limit(KEYS[k + p - 1], ARGV[q], tonumber(ARGV[q + 1]), limit_b(ARGV[q], ARGV[q + 2], now),
          ARGV[q] == 'k' and slot or cost)
      end
    end
    choices[#choices + 1] = new_choice(pick, m, first, count, cost, most, max_delay)
    k = k + m
  end
  if k ~= #KEYS + 1 then
    return bad(#KEYS .. ' keys for ' .. (k - 1))
  end
end

-- append_choices appends each choice's part of the reply; all is the
-- call's verdict, proceed_at - now its delay.
local unused = {1, 0, 0, -1, 0, 0, 0} -- a position's reply when unused

local function append_choices(reply, limits, choices, all, proceed_at, now)
  for ci = 1, #choices do
    local c = choices[ci]
    reply[#reply + 1] = c.pick
    if c.most then reply[#reply + 1] = c.grant or 0 end
    if c.max_delay then reply[#reply + 1] = all and proceed_at - now or 0 end
    for p = 1, c.positions do
      local r = #reply
      if p <= c.count then
        local l = limits[c.first + p - 1]
        reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4], reply[r + 5] = l.allowed and 1 or 0, l.a, l.remaining, l.retry, l.reset
        reply[r + 6], reply[r + 7] = codes[l.algorithm], l.b
      else
        for v = 1, 7 do reply[r + v] = unused[v] end
      end
    end
  end
end
