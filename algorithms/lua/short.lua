-- short: the shapes decide.lua answers without building its records (a
-- record costs more Redis CPU than these shapes take in all, measured in
-- BENCHMARKS.md): one plain limit, and one throttled funnel alone in its
-- call. Each decides and replies exactly as the general path would.
-- Defines short_path, decide_one and decide_lone_throttle.
-- TestEachShapeOfCallTakesItsPath pins which shapes take them.

-- short_path names the short path of a call whose block count nb is
-- valid: 'one', 'throttle', or nil for the general path.
local function short_path(KEYS, ARGV, grouped, nb)
  if not grouped then
    if #KEYS == nb + 1 then return 'one' end
    return nil
  end
  -- 'g', nb, 0 plain limits, 'x', flags F_THROTTLE, 1 position, cost,
  -- 1 tier, max delay, tier name, 1 limit, 'f', a, b.
  if #KEYS == nb + 1 and #ARGV == 14 and ARGV[3] == '0' and ARGV[5] == '16' and ARGV[6] == '1'
      and ARGV[8] == '1' and ARGV[11] == '1' and ARGV[12] == 'f' then
    return 'throttle'
  end
  return nil
end

-- decide_one decides one plain limit: key KEYS[nb + 1], and ARGV[2..5]
-- its algorithm, a, b and cost.
local function decide_one(KEYS, ARGV, nb, now, peek)
  local key, algorithm, a, b, cost = KEYS[nb + 1], ARGV[2], tonumber(ARGV[3]), limit_b(ARGV[2], ARGV[4], now),
    tonumber(ARGV[5])
  local check, commit = checks[algorithm], commits[algorithm]
  if not is_state(key) then return role_error(nb + 1) end
  if not check or not whole_limit(a, b, cost, -1) or (peek and cost > 0) then
    return bad('bad arguments for limit 1')
  end
  local allowed, remaining, retry, reset, state1, state2 = check(key, a, b, now, cost == -1 and 1 or cost)
  if allowed and cost == -1 then
    allowed, remaining, retry, reset = check(key, a, b, now, 0)
  elseif allowed and cost ~= 0 then
    commit(key, a, b, now, cost, state1, state2)
  end
  return {now, -2, allowed and 1 or 0, a, remaining, retry, reset}
end

-- decide_lone_throttle decides a lone throttled funnel (short_path's
-- layout): charged as of the time it conforms, proceed_at, when that is
-- within its max delay (throttle.lua).
local function decide_lone_throttle(KEYS, ARGV, nb, now, peek)
  local key, cost, max_delay, a, b = KEYS[nb + 1], tonumber(ARGV[7]), tonumber(ARGV[9]), tonumber(ARGV[13]), tonumber(ARGV[14])
  if not is_state(key) then return role_error(nb + 1) end
  if peek or ARGV[4] ~= 'x' or not whole_limit(a, b, cost, 1) or not whole(max_delay, 0) then
    return bad('bad throttle')
  end
  local tat = tonumber(redis.call('GET', key)) or now
  local proceed_at = math.max(now, math.max(tat, now) + (cost - a) * b)
  if proceed_at - now > max_delay then proceed_at = now end
  local allowed, remaining, retry, reset, new_tat = funnel_check(key, a, b, proceed_at, cost)
  if allowed then funnel_commit(key, a, b, now, cost, new_tat) end
  -- The choice's reply: pick 1, the delay, then its one position.
  local delay = proceed_at - now
  return {now, -2, 1, allowed and delay or 0, allowed and 1 or 0, a, remaining, retry, reset + delay, 3, b}
end
