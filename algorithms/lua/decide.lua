-- decide: every limit of one request, all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c' or 'f'), a, b, cost.
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists.
-- Two phases: every limit is checked without charging (a check may trim
-- entries that left the window), then, only if all allow, each is charged.
-- If any limit denies, nothing is charged.
-- Needs Redis >= 5, where scripts replicate their effects, so TIME may
-- precede writes.

-- Each algorithm is a table of two functions over a limit's table l:
-- check(l, now, n) decides a request of cost n without charging it and
-- sets l.allowed, l.remaining, l.retry and l.reset (us), plus the state
-- its commit needs; commit(l, now) charges l.cost as check found it.
local algorithms = {l = sliding_log, c = sliding_counter, f = funnel}

local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local nb = tonumber(ARGV[1])
if not nb or nb < 0 or nb > #KEYS then
  return redis.error_reply('ERR ratelimit: bad block key count')
end
for i = 1, nb do
  local blocked = redis.call('PTTL', KEYS[i])
  if blocked ~= -2 then return {now, blocked, i} end
end

-- One table per limit: its algorithm, key, a, b and cost, then what its
-- check found (those fields are set up front, so the table is sized once).
local limits, all = {}, true
local n = #KEYS - nb
for i = 1, n do
  local j = 4 * i - 2
  local algorithm, a, b, cost = algorithms[ARGV[j]], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  if not algorithm or not a or not b or not cost then
    return redis.error_reply('ERR ratelimit: bad arguments for limit ' .. i)
  end
  local l = {algorithm = algorithm, key = KEYS[nb + i], a = a, b = b, cost = cost,
    allowed = false, remaining = 0, retry = 0, reset = 0}
  algorithm.check(l, now, cost)
  if not l.allowed then all = false end
  limits[i] = l
end

local reply = {now, -2}
for i = 1, n do
  local l = limits[i]
  if all then
    -- A cost of 0 peeks: decided like any other, it charges nothing.
    if l.cost ~= 0 then l.algorithm.commit(l, now) end
  elseif l.allowed then
    -- Another limit denied: report what this one has left, uncharged.
    l.algorithm.check(l, now, 0)
  end
  local r = 5 * i - 2
  reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] = l.allowed and 1 or 0, l.a, l.remaining, l.retry, l.reset
end
return reply
