-- decide: every limit of one request, all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c', 'f' or 'k'), a, b, cost. A cost of 0 peeks; a cost
-- of -1 checks only: decided as a cost of 1, reported as a peek when it
-- fits, never charged. A concurrency limit ('k') takes one slot whatever
-- the request's cost: its cost field carries the slot id instead (> 0).
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists. ARGV[1] = 'g' is a call with choices: see
-- choice.lua. A peek (peek set) must check only: every cost is -1.
-- Needs Redis >= 5, where scripts replicate their effects, so TIME may
-- precede writes.
--
-- Each algorithm has check(key, a, b, now, n), which decides a request of
-- cost n without charging it and returns allowed, remaining, retry and
-- reset (us), then up to two values for its commit(key, a, b, now, n, ...),
-- which charges it.
--
-- decide is this file, choice.lua and decide_all.lua, which closes it.
-- Every key it writes is a state key (roles.lua): blocks, tiers and
-- overrides are only read.

local function decide(KEYS, ARGV, peek)
if #KEYS > max_keys then return redis.error_reply('ERR ratelimit: too many keys') end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local grouped = ARGV[1] == 'g'
local nb = tonumber(ARGV[grouped and 2 or 1])
if not nb or nb < 0 or nb > #KEYS then
  return redis.error_reply('ERR ratelimit: bad block key count')
end
for i = 1, nb do
  if not has_role(KEYS[i], ':block') then return role_error(i) end
  local blocked = redis.call('PTTL', KEYS[i])
  if blocked ~= -2 then return {now, blocked, i} end
end

-- One funnel: check, then charge if it allows. (decide_all.lua decides
-- one limit of another algorithm alike; a shared function would cost a
-- closure.)
if #KEYS == nb + 1 and ARGV[2] == 'f' and not grouped then
  local key, a, b, cost = KEYS[nb + 1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if not is_state(key) then return role_error(nb + 1) end
  if not a or not b or not cost or cost < -1 or (peek and cost ~= -1) or not bounded(a, b, cost) then
    return redis.error_reply('ERR ratelimit: bad arguments for limit 1')
  end
  local allowed, remaining, retry, reset, tat = funnel_check(key, a, b, now, cost == -1 and 1 or cost)
  if allowed and cost == -1 then
    allowed, remaining, retry, reset = funnel_check(key, a, b, now, 0)
  elseif allowed and cost ~= 0 then
    funnel_commit(key, a, b, now, cost, tat)
  end
  return {now, -2, allowed and 1 or 0, a, remaining, retry, reset}
end

-- One throttled funnel, as choice.lua and decide_all.lua would decide it
-- (a choice of flags 16, one tier of one funnel, no plain limit): charged
-- as of the time it conforms when that is within its max delay.
-- ARGV: 'g', nb, 0, 'x', 16, 1, cost, 1, max delay, name, 1, 'f', a, b.
if grouped and #KEYS == nb + 1 and #ARGV == 14 and ARGV[3] == '0' and ARGV[5] == '16' and ARGV[6] == '1'
    and ARGV[8] == '1' and ARGV[11] == '1' and ARGV[12] == 'f' then
  local key, cost, wait, a, b = KEYS[nb + 1], tonumber(ARGV[7]), tonumber(ARGV[9]), tonumber(ARGV[13]), tonumber(ARGV[14])
  if not is_state(key) then return role_error(nb + 1) end
  if peek or ARGV[4] ~= 'x' or not cost or cost < 1 or not wait or wait < 0 or not a or not b or a < 1 or b < 1
      or not bounded(a, b, cost) then
    return redis.error_reply('ERR ratelimit: bad throttle')
  end
  local tat = tonumber(redis.call('GET', key)) or now
  local at = math.max(now, math.max(tat, now) + (cost - a) * b)
  if at - now > wait then at = now end
  local allowed, remaining, retry, reset, new_tat = funnel_check(key, a, b, at, cost)
  if allowed then funnel_commit(key, a, b, now, cost, new_tat) end
  return {now, -2, 1, allowed and at - now or 0, allowed and 1 or 0, a, remaining, retry, reset + at - now, 3, b}
end

