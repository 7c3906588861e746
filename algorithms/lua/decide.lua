-- decide: the entry point that decides every limit of one request,
-- all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c', 'f', 'k' or 'p'), a, b, cost (a calendar limit's
-- b is its bounds: calendar.lua). A cost of 0 peeks; a cost
-- of -1 checks only: decided as a cost of 1, reported as a peek when it
-- fits, never charged. A concurrency limit takes a slot (limits.lua).
-- ARGV[1] = 'g' is a call with choices: see choice.lua.
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists. A peek (peek set) charges nothing: every cost
-- is -1 or 0, and it writes nothing (read_only). Every key it writes is a state key (roles.lua): blocks, tiers
-- and overrides are only read. Needs Redis >= 5, where scripts replicate
-- their effects, so TIME may precede writes.
--
-- One plain limit, and a lone throttled funnel, take short paths
-- (short.lua). Every other call takes two phases: every limit is checked
-- without charging (a check may trim entries that left the window), then,
-- only if all allow, each is charged. If any limit denies, nothing is
-- charged.

-- check_limit is phase one for limit i: its verdict as of now, or as of
-- proceed_at for a late funnel (throttle.lua). It returns an error reply,
-- or nil.
local function check_limit(l, i, now, proceed_at, peek)
  local check, a, b, cost = checks[l.algorithm], l.a, l.b, l.cost
  if not is_state(l.key) then return bad('limit ' .. i .. ' is not a state key') end
  if not check or not whole_limit(a, b, cost, -1) or (peek and cost > 0) then
    return bad('bad arguments for limit ' .. i)
  end
  local as_of = l.late and proceed_at or now
  local allowed, remaining, retry, reset, state1, state2 = check(l.key, a, b, as_of, cost == -1 and 1 or cost)
  reset = reset + as_of - now
  if allowed and cost == -1 then
    allowed, remaining, retry, reset = check(l.key, a, b, now, 0)
  elseif allowed and proceed_at > now and l.algorithm == 'f' and cost > 0 and not l.late then
    -- Admitted now, it goes on at proceed_at: charged as a request
    -- arriving then.
    local _, _, _, _, tat = check(l.key, a, b, proceed_at, cost)
    state1 = tat
  end
  l.allowed, l.remaining, l.retry, l.reset, l.state1, l.state2 = allowed, remaining, retry, reset, state1, state2
end

local function decide(KEYS, ARGV, peek)
  read_only = peek
  local grouped = ARGV[1] == 'g' -- a call with choices
  local nb = tonumber(ARGV[grouped and 2 or 1]) -- its block keys
  local np -- its plain limits: with choices ARGV[3], else every other key
  if grouped then np = tonumber(ARGV[3]) elseif nb then np = #KEYS - nb end
  if #KEYS > max_keys then return bad('too many keys') end
  local now = clock_us()
  if not whole(nb, 0) or nb > #KEYS then
    return bad('bad block key count')
  end
  for i = 1, nb do
    if not has_role(KEYS[i], ':block') then return role_error(i) end
    local pttl = redis.call('PTTL', KEYS[i])
    if pttl ~= -2 then return {now, pttl, i} end
  end
  local path = short_path(KEYS, ARGV, grouped, nb)
  if path == 'one' then return decide_one(KEYS, ARGV, nb, now, peek) end
  if path == 'throttle' then return decide_lone_throttle(KEYS, ARGV, nb, now, peek) end

  local limits, choices, proceed_at = {}, nil, now
  if grouped then
    if not whole(np, 0) or nb + np > #KEYS then
      return bad('bad plain limit count')
    end
    read_limits(limits, KEYS, ARGV, nb, np, 4, now)
    choices = {}
    local err = read_choices(limits, choices, KEYS, ARGV, 4 * np + 4, nb + np + 1, now)
    if err then return err end
    proceed_at = throttle_time(limits, choices, now)
  else
    read_limits(limits, KEYS, ARGV, nb, np, 2, now)
  end

  local n, all = #limits, true
  for i = 1, n do
    local l = limits[i]
    local err = check_limit(l, i, now, proceed_at, peek)
    if err then return err end
    if not l.allowed then all = false end
  end
  if all and choices then grant_leases(limits, choices, now, proceed_at) end
  for i = 1, n do
    local l = limits[i]
    if all then
      if l.cost > 0 then commits[l.algorithm](l.key, l.a, l.b, now, l.cost, l.state1, l.state2) end
    elseif l.allowed then
      -- Another limit denied: report what this one has left, uncharged.
      l.allowed, l.remaining, l.retry, l.reset = checks[l.algorithm](l.key, l.a, l.b, now, 0)
    end
  end

  local reply = {now, -2}
  for i = 1, np do
    local l, r = limits[i], 5 * i - 2
    reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] = l.allowed and 1 or 0, l.a, l.remaining, l.retry, l.reset
  end
  if choices then append_choices(reply, limits, choices, all, proceed_at, now) end
  return reply
end
