-- choice: a call in which Redis picks the limits of some rule keys.
-- ARGV[1] = 'g', ARGV[2] = nb, ARGV[3] = np: np plain limits follow
-- (KEYS[nb+1..nb+np], four values each as in decide.lua), then choices to
-- the end. A choice is 'x', flags, m, cost, ntiers, then a slot id when
-- flags has 4, then per tier: its name, its count of limits, and per
-- limit algorithm, a, b. Its KEYS: the tier key when flags has 1, the
-- override key when flags has 2, then the state keys of its m positions.
-- Every picked limit takes cost, but a concurrency limit takes the slot
-- id when there is one.
-- A lease (flags has 8) takes more than cost when the whole call is
-- admitted: the most units, up to its most, that every picked limit still
-- admits (see decide_all.lua); never for a concurrency limit.
-- A throttle (flags has 16, then its max delay in microseconds) lets a
-- request its funnels deny now through later: see decide_all.lua.
-- Redis picks the override when its key holds one ("algorithm:a:b,...",
-- 1 to m limits), else the tier the tier key names, else tier 1, the
-- default. The picked limits decide on the positions' keys in order.
-- Reply: {now, -2, 5 values per plain limit as in decide.lua, then per
-- choice: the pick (0 the override, else the tier's number), for a lease
-- the units it took (0 when denied), for a throttle the call's delay in
-- microseconds (0 when denied), then per
-- position: allowed, a, remaining, retry_after_us, reset_after_us,
-- algorithm (1 l, 2 c, 3 f, 4 k) and b, or 1, 0, 0, -1, 0, 0, 0 when the
-- picked limits leave the position unused}.

-- The limits to decide, in order: key, algorithm, a, b, cost; and per
-- choice {pick, m, index of its first limit, its count of limits, the
-- lease's most units or nil, cost, the lease's grant (set later), the
-- throttle's max delay or nil}.
local lk, lc, la, lb, ln, picks = {}, {}, {}, {}, {}, nil
if grouped then
  picks = {}
  local np = tonumber(ARGV[3])
  if not np or np < 0 or nb + np > #KEYS then
    return redis.error_reply('ERR ratelimit: bad plain limit count')
  end
  for i = 1, np do
    local j = 4 * i
    lk[i], lc[i], la[i], lb[i], ln[i] = KEYS[nb + i], ARGV[j], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  end
  local j, k = 4 * np + 4, nb + np + 1 -- the next choice's ARGV and KEYS
  while j <= #ARGV do
    local flags, m, cost, ntiers = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4])
    if ARGV[j] ~= 'x' or not flags or not m or not cost or not ntiers or m < 1 or ntiers < 1 then
      return redis.error_reply('ERR ratelimit: bad choice at argument ' .. j)
    end
    local tier, over, slot, most, wait = nil, nil, cost, nil, nil
    if flags % 2 == 1 then
      if not has_role(KEYS[k], ':tier') then return role_error(k) end
      tier = redis.call('GET', KEYS[k]); k = k + 1
    end
    if flags % 4 >= 2 then
      if not has_role(KEYS[k], ':override') then return role_error(k) end
      over = redis.call('GET', KEYS[k]); k = k + 1
    end
    if flags % 8 >= 4 then
      slot = tonumber(ARGV[j + 5])
      if not slot or slot < 1 then return redis.error_reply('ERR ratelimit: bad slot at argument ' .. (j + 5)) end
      j = j + 1
    end
    if flags % 16 >= 8 then
      most = tonumber(ARGV[j + 5])
      if not most or most < cost or cost < 1 then return redis.error_reply('ERR ratelimit: bad lease at argument ' .. (j + 5)) end
      j = j + 1
    end
    if flags >= 16 then
      wait = tonumber(ARGV[j + 5])
      if not wait or wait < 0 or cost < 1 or most then return redis.error_reply('ERR ratelimit: bad throttle at argument ' .. (j + 5)) end
      j = j + 1
    end
    if k + m - 1 > #KEYS then
      return redis.error_reply('ERR ratelimit: bad choice at argument ' .. j)
    end
    local first, pick, count = #lk + 1, 1, 0
    if over then
      local ok = true
      for code, a, b in string.gmatch(over, '([lcfk]):(%d+):(%d+)') do
        count = count + 1
        if count > m or tonumber(a) < 1 or tonumber(b) < 1 then ok = false; break end
        local i = first + count - 1
        lk[i], lc[i], la[i], lb[i], ln[i] = KEYS[k + count - 1], code, tonumber(a), tonumber(b), code == 'k' and slot or cost
      end
      if ok and count > 0 then
        pick = 0
      else -- not an override this script wrote: the tier applies
        for i = #lk, first, -1 do lk[i], lc[i], la[i], lb[i], ln[i] = nil, nil, nil, nil, nil end
        count = 0
      end
    end
    j = j + 5
    local at = j -- the picked tier's first argument
    for t = 1, ntiers do
      local c = tonumber(ARGV[j + 1])
      if not c or c < 1 or c > m then
        return redis.error_reply('ERR ratelimit: bad tier ' .. t .. ' of the choice')
      end
      if pick ~= 0 and t > 1 and ARGV[j] == tier then pick, at = t, j end
      j = j + 2 + 3 * c
    end
    if pick ~= 0 then
      count = tonumber(ARGV[at + 1])
      for p = 1, count do
        local i, q = first + p - 1, at + 3 * p - 1
        lk[i], lc[i], la[i], lb[i], ln[i] = KEYS[k + p - 1], ARGV[q], tonumber(ARGV[q + 1]), tonumber(ARGV[q + 2]), ARGV[q] == 'k' and slot or cost
      end
    end
    picks[#picks + 1] = {pick, m, first, count, most, cost, nil, wait}
    k = k + m
  end
  if k ~= #KEYS + 1 then
    return redis.error_reply('ERR ratelimit: ' .. #KEYS .. ' keys for ' .. (k - 1))
  end
end
