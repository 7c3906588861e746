-- settle: the entry point that adjusts what admitted requests were
-- charged, once their real costs are known; and each algorithm's settle.
-- ARGV[1] = 's'; KEYS[i] is the key of settle i, and ARGV then holds six
-- values per settle: algorithm, a, b (a calendar limit's bounds, as
-- decide takes them), at (the admission's Redis time, us),
-- reserved (what it charged; 0 for none) and cost (the real cost, >= 0).
-- Reply: {now_us, then per settle: applied, remaining}: applied is the
-- signed change made (> 0 charged, < 0 refunded), remaining what is left
-- after it, negative in debt.
-- One rule for every algorithm, with d = cost - reserved: a settle adjusts
-- the admission's own record while it still counts; a charge beyond it,
-- once it no longer counts, is charged now; a refund of a record that no
-- longer counts is nothing. reserved = 0 charges cost now. A settle never
-- denies, may overdraw, and is independent of the others of its call.
-- A concurrency limit's settle is a release: reserved is the slot id,
-- cost is unused; applied is -1 when the slot was held, 0 when it had
-- expired or was lost, and remaining is the slots free after it.

-- The TAT moves by d * T, never below now. Applied is the change in
-- units left, so a refund that empties the funnel counts whole units.
local function funnel_settle(key, burst, interval, now, _, reserved, cost)
  local tau = burst * interval
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = math.max(now, tat + (cost - reserved) * interval)
  if new_tat > now and new_tat ~= tat then
    redis.call('SET', key, new_tat, 'PX', math.ceil((new_tat - now) / 1000))
  elseif new_tat ~= tat then
    redis.call('DEL', key)
  end
  local left = math.floor((now - new_tat + tau) / interval)
  return math.floor((now - tat + tau) / interval) - left, left
end

-- The count of the admission's window, current or previous, moves by d,
-- never below 0; in an older window the record is gone.
local function counter_settle(key, limit, w, now, at, reserved, cost)
  local idx, e = counter_window(now, w)
  local cur, prev = counter_counts(key, idx)
  local d = cost - reserved
  local at_idx = reserved > 0 and counter_window(at, w) or idx
  if at_idx == idx - 1 then
    d = math.max(-prev, d)
    prev = prev + d
  else
    if at_idx ~= idx and d < 0 then d = 0 end
    d = math.max(-cur, d)
    cur = cur + d
  end
  if d ~= 0 then
    redis.call('HSET', key, 'w', idx, 'c', cur, 'p', prev)
    redis.call('PEXPIRE', key, 2 * w - e)
  end
  return d, math.floor((limit * w - prev * (w - e) - cur * w) / w)
end

-- The admission's entry (any at its time with its weight) takes the
-- weight cost, and goes at 0; once it has left the window, a charge
-- beyond it is a new entry at now.
local function log_settle(key, limit, window, now, at, reserved, cost)
  local total, weighted = log_trim(key, window, now)
  local d, found, weight = cost - reserved, nil, 0
  if reserved > 0 and d ~= 0 and at > now - window then
    local same = redis.call('ZRANGEBYSCORE', key, at, at)
    for i = 1, #same do
      if log_weight(same[i]) == reserved then found = same[i] break end
    end
  end
  if found then
    redis.call('ZREM', key, found)
    weight = cost
    if weight > 0 then log_add(key, at, weight) end
  elseif d > 0 then
    weight = d
    log_add(key, now, weight)
    log_expire(key, window)
  else
    d = 0
  end
  if (weighted or weight > 1) and not read_only then redis.call('ZADD', key, -(total + d), 's') end
  return d, limit - total - d
end

-- A release: the slot leaves, unless it has expired already.
local function conc_settle(key, limit, _, now, _, slot)
  local used = conc_trim(key, now)
  local gone = redis.call('ZREM', key, string.format('%d', slot))
  return -gone, limit - used + gone
end

local settle_by = {l = log_settle, c = counter_settle, f = funnel_settle, k = conc_settle, p = calendar_settle}

-- settle applies one call's settles. Every key is a state key (roles.lua).
-- A peek (peek set) only reads what remains: every settle's reserved and
-- cost are 0, and none is a release.
local function settle(KEYS, ARGV, peek)
  read_only = peek == true
  local mode, count = ARGV[1], #KEYS
  if mode ~= 's' or #ARGV ~= 1 + 6 * count or count > max_keys then
    return bad('bad settle argument count')
  end
  -- Every settle is read before any is applied: a bad one writes nothing.
  local settles, now = {}, clock_us()
  for i = 1, count do
    local j = 6 * i - 4
    local algorithm, a, b, at, reserved, cost = ARGV[j], tonumber(ARGV[j + 1]), limit_b(ARGV[j], ARGV[j + 2], now),
      tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5])
    if not settle_by[algorithm] or not whole_limit(a, b, reserved, 0) or not whole(at, 0) or not whole(cost, 0)
        or (read_only and (reserved ~= 0 or cost ~= 0 or algorithm == 'k')) then
      return bad('bad arguments for settle ' .. i)
    end
    if not is_state(KEYS[i]) then return role_error(i) end
    if algorithm == 'p' then b = ARGV[j + 2] end -- calendar_settle reads its bounds
    settles[i] = {algorithm = algorithm, a = a, b = b, at = at, reserved = reserved, cost = cost}
  end
  local reply = {now}
  for i = 1, count do
    local s = settles[i]
    reply[2 * i], reply[2 * i + 1] = settle_by[s.algorithm](KEYS[i], s.a, s.b, now, s.at, s.reserved, s.cost)
  end
  return reply
end
