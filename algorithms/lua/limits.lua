-- limits: a decide call's limits, one record each, and the algorithms by
-- code. Defines checks, commits, codes, new_limit and read_limits.
--
-- Each algorithm has check(key, a, b, now, n), which decides a request of
-- cost n without charging it and returns allowed, remaining, retry and
-- reset (us), then up to two values for its commit(key, a, b, now, n, ...),
-- which charges it.

local checks = {l = log_check, c = counter_check, f = funnel_check, k = conc_check, p = calendar_check}
local commits = {l = log_commit, c = counter_commit, f = funnel_commit, k = conc_commit, p = calendar_commit}
local codes = {l = 1, c = 2, f = 3, k = 4, p = 5} -- in a choice's reply

-- new_limit is one limit: its state key, algorithm ('l', 'c', 'f', 'k'
-- or 'p'), a, b and the cost it takes (-1 checks only). decide fills in its
-- verdict (allowed, remaining, retry and reset, in us) and what its check
-- returned for its commit (state1, state2); a throttle marks it late.
-- The fields set to nil only size the table.
local function new_limit(key, algorithm, a, b, cost)
  return {key = key, algorithm = algorithm, a = a, b = b, cost = cost, allowed = false,
    remaining = 0, retry = 0, reset = 0, state1 = nil, state2 = nil, late = nil}
end

-- read_limits reads count plain limits into limits: limit i's key is
-- KEYS[nb + i], and four values from ARGV[first + 4 * (i - 1)] on are its
-- algorithm, a, b and cost. A concurrency limit ('k') takes one slot
-- whatever the request's cost: its cost carries the slot id (> 0).
local function read_limits(limits, KEYS, ARGV, nb, count, first, now)
  for i = 1, count do
    local j = first + 4 * i - 4
    limits[i] = new_limit(KEYS[nb + i], ARGV[j], tonumber(ARGV[j + 1]), limit_b(ARGV[j], ARGV[j + 2], now),
      tonumber(ARGV[j + 3]))
  end
end
