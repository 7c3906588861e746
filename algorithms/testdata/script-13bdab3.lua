-- The script of build 13bdab3, the last before the Functions library: a
-- test runs it beside the library on the same keys (old_build_test.go).
-- Funnel: a leaky bucket computed as GCRA, with redis-cell CL.THROTTLE semantics.
-- a = burst capacity B, b = emission interval T in microseconds
-- (period / rate). The key holds the theoretical arrival time (TAT) in
-- microseconds. A settle may push the TAT past now + tau: a debt, which
-- denies every request until it drains.

-- funnel_check decides a request of cost n, reading only; when it allows,
-- it also returns the TAT funnel_commit stores.
local function funnel_check(key, burst, t, now, n)
  local tau = burst * t
  local tat = tonumber(redis.call('GET', key)) or now
  if tat < now then tat = now end
  local new_tat = tat + n * t
  local diff = now - (new_tat - tau)
  if diff < 0 then
    return false, math.max(0, math.floor((now - tat + tau) / t)), -diff, tat - now
  end
  return true, math.floor(diff / t), -1, new_tat - now, new_tat
end

-- funnel_commit stores the new TAT, kept until the funnel is empty again.
local function funnel_commit(key, _, _, now, _, tat)
  redis.call('SET', key, tat, 'PX', math.ceil((tat - now) / 1000))
end

-- decide: every limit of one request, all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c', 'f' or 'k'), a, b, cost. A cost of 0 peeks; a cost
-- of -1 checks only: decided as a cost of 1, reported as a peek when it
-- fits, never charged. A concurrency limit ('k') takes one slot whatever
-- the request's cost: its cost field carries the slot id instead (> 0).
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists.
-- ARGV[1] = 's' settles instead: see settle.lua.
-- Needs Redis >= 5, where scripts replicate their effects, so TIME may
-- precede writes.
--
-- Each algorithm has check(key, a, b, now, n), which decides a request of
-- cost n without charging it and returns allowed, remaining, retry and
-- reset (us), then up to two values for its commit(key, a, b, now, n, ...),
-- which charges it.
--
-- The script is funnel.lua, this file, sliding_log.lua, sliding_counter.lua,
-- concurrency.lua, settle.lua, choice.lua and decide_all.lua, run top to
-- bottom on every call. Each function and table it creates costs Redis
-- CPU on every call (the other algorithms' functions 0.3-0.7us of a 7us
-- call), so the commonest shape, one funnel limit, is decided here,
-- before they exist.

-- ARGV[1] = 'e' reads the epoch an operator's change bumps, KEYS[1]: the
-- number, 0 when unset. ARGV[1] = 'g' is a call with choices: see
-- choice.lua.
if ARGV[1] == 'e' then return tonumber(redis.call('GET', KEYS[1])) or 0 end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local settle = ARGV[1] == 's'
local grouped = ARGV[1] == 'g'
local nb = settle and 0 or tonumber(ARGV[grouped and 2 or 1])
if not nb or nb < 0 or nb > #KEYS then
  return redis.error_reply('ERR ratelimit: bad block key count')
end
for i = 1, nb do
  local blocked = redis.call('PTTL', KEYS[i])
  if blocked ~= -2 then return {now, blocked, i} end
end

-- One funnel: check, then charge if it allows. (decide_all.lua decides
-- one limit of another algorithm alike; a shared function would cost a
-- closure.)
if #KEYS == nb + 1 and ARGV[2] == 'f' and not settle and not grouped then
  local key, a, b, cost = KEYS[nb + 1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if not a or not b or not cost or cost < -1 then
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
  if ARGV[4] ~= 'x' or not cost or cost < 1 or not wait or wait < 0 or not a or not b or a < 1 or b < 1 then
    return redis.error_reply('ERR ratelimit: bad throttle')
  end
  local tat = tonumber(redis.call('GET', key)) or now
  local at = math.max(now, math.max(tat, now) + (cost - a) * b)
  if at - now > wait then at = now end
  local allowed, remaining, retry, reset, new_tat = funnel_check(key, a, b, at, cost)
  if allowed then funnel_commit(key, a, b, now, cost, new_tat) end
  return {now, -2, 1, allowed and at - now or 0, allowed and 1 or 0, a, remaining, retry, reset + at - now, 3, b}
end


-- Sliding log: an exact sliding window over a sorted set of admissions.
-- a = L, the units allowed per window of b = W microseconds.
-- One member per admission: score = its time in us, member '<us>' or
-- '<us>.<k>' (k keeps it unique), then ':<weight>' unless the weight is 1.
-- An entry admitted at s counts while s > now - W; the k-th oldest unit is
-- in the entry where the weights, summed oldest first, reach k.
-- Once a weight is not 1, member 's' keeps the total as its score, -total
-- (<= 0, below every entry). Without it every weight is 1 and the total is
-- ZCARD: unit-cost logs, and keys the one-member-per-unit script wrote.

local function log_weight(member)
  local c = string.find(member, ':', 1, true)
  if c then return tonumber(string.sub(member, c + 1)) end
  return 1
end

-- log_trim drops the entries that left the window; it returns the total
-- and whether member 's' holds it.
local function log_trim(key, window, now)
  local s = redis.call('ZSCORE', key, 's')
  if not s then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
    return redis.call('ZCARD', key), false
  end
  local total = -tonumber(s)
  local gone = redis.call('ZRANGEBYSCORE', key, '(0', now - window)
  if #gone > 0 then
    for i = 1, #gone do total = total - log_weight(gone[i]) end
    redis.call('ZREMRANGEBYSCORE', key, '(0', now - window)
    redis.call('ZADD', key, -total, 's')
  end
  return total, true
end

-- log_check decides a request of cost n. It trims the entries that left
-- the window, and charges nothing; its commit needs the total and whether
-- 's' holds it.
local function log_check(key, limit, window, now, n)
  local used, weighted = log_trim(key, window, now)
  if used + n <= limit and n > 0 then
    return true, limit - used - n, -1, window, used, weighted
  end
  local reset = 0
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] and last[1] ~= 's' then reset = tonumber(last[2]) + window - now end
  if used + n <= limit then
    return true, limit - used, -1, reset
  end
  -- The k oldest units must leave the window first.
  local retry = window
  local k = used + n - limit
  if k <= used and not weighted then
    local e = redis.call('ZRANGE', key, k - 1, k - 1, 'WITHSCORES')
    retry = tonumber(e[2]) + window - now
  elseif k <= used then
    local from = 1 -- past 's'
    while k > 0 do
      local e = redis.call('ZRANGE', key, from, from + 31, 'WITHSCORES')
      if #e == 0 then break end
      for i = 1, #e, 2 do
        k = k - log_weight(e[i])
        if k <= 0 then retry = tonumber(e[i + 1]) + window - now break end
      end
      from = from + 32
    end
  end
  return false, math.max(0, limit - used), retry, reset
end

-- log_add adds an entry of weight w at score at, under a member no other
-- has. (Numbers reach Redis as integers; Lua's own tostring would not.)
local function log_add(key, at, w)
  local tail = w == 1 and '' or string.format(':%d', w)
  if redis.call('ZADD', key, at, string.format('%d', at) .. tail) == 1 then return end
  local k = redis.call('ZCOUNT', key, at, at)
  while redis.call('ZADD', key, at, string.format('%d.%d', at, k) .. tail) == 0 do k = k + 1 end
end

-- log_expire keeps the key for at least one window: never less than it
-- had, since the tiers sharing a key may have longer windows.
local function log_expire(key, window)
  local ms = math.ceil(window / 1000)
  if redis.call('PTTL', key) < ms then redis.call('PEXPIRE', key, ms) end
end

-- log_commit adds one entry of weight n at now, keeps the total in 's'
-- once a weight is not 1, and keeps the key for one window.
local function log_commit(key, _, window, now, n, used, weighted)
  log_add(key, now, n)
  if weighted or n ~= 1 then redis.call('ZADD', key, -(used + n), 's') end
  log_expire(key, window)
end

-- Sliding counter: two fixed windows, weighted; O(1) memory per key.
-- a = L, the requests allowed per window of b = W milliseconds. The
-- estimate of requests in the last W is prev * (W - e) / W + cur, e = time
-- into the current window. All arithmetic is scaled by W so it stays in
-- exact integers (L * W <= 2^50 is enforced). A settle may leave the
-- counts above L, a debt: the formulas below still hold.

-- counter_window places now: the current window's index, the time e into
-- it (ms), and the microseconds past now's millisecond.
local function counter_window(now, w)
  local now_ms = math.floor(now / 1000)
  local idx = math.floor(now_ms / w)
  return idx, now_ms - idx * w, now - now_ms * 1000
end

-- counter_counts reads the counts of the current window idx and the one
-- before it; a window the key does not hold counts 0.
local function counter_counts(key, idx)
  local st = redis.call('HMGET', key, 'w', 'c', 'p')
  local stored = tonumber(st[1])
  if stored == idx then
    return tonumber(st[2]) or 0, tonumber(st[3]) or 0
  elseif stored == idx - 1 then
    return 0, tonumber(st[2]) or 0
  end
  return 0, 0
end

-- counter_check decides a request of cost n, reading only; when it allows
-- a cost above 0, it also returns the current and previous windows' counts
-- its commit stores.
local function counter_check(key, limit, w, now, n)
  local idx, e, sub = counter_window(now, w)
  local cur, prev = counter_counts(key, idx)
  local free = limit * w - prev * (w - e) - cur * w
  local after = cur
  local ok = n * w <= free and n > 0
  if ok then after = cur + n end
  local reset = 0
  if after > 0 then reset = 2 * w - e elseif prev > 0 then reset = w - e end
  if reset > 0 then reset = reset * 1000 - sub end
  if ok then
    return true, math.floor(free / w) - n, -1, reset, after, prev
  end
  if n * w <= free then
    return true, math.floor(free / w), -1, reset
  end
  local d
  if cur + n <= limit then
    d = w - math.floor((limit - cur - n) * w / prev) - e
  elseif n <= limit then
    local wait = w - math.floor((limit - n) * w / cur)
    if wait < 0 then wait = 0 end
    d = w - e + wait
  else
    d = 2 * w - e
  end
  return false, math.max(0, math.floor(free / w)), d * 1000 - sub, reset
end

-- counter_commit stores the window check found, kept while it can still
-- count. Check and commit see one now, so they place it alike.
local function counter_commit(key, _, w, now, _, cur, prev)
  local idx, e = counter_window(now, w)
  redis.call('HSET', key, 'w', idx, 'c', cur, 'p', prev)
  redis.call('PEXPIRE', key, 2 * w - e)
end

-- Concurrency: requests in flight. a = L, the slots; b = D, the most a
-- slot is held (max_duration), in us. The key is a sorted set of the
-- slots held: member = the slot id the caller chose (its cost field, an
-- integer below 2^53), score = the slot's expiry, acquired at + D. A slot
-- leaves by its release (settle.lua) or once expired, so a release that
-- never comes (a proxy that died) frees it after D. A cost above 0
-- acquires that slot; 0 peeks.

-- conc_trim drops the expired slots and returns how many are held.
local function conc_trim(key, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key)
end

-- conc_check decides a request that takes one slot (n > 0) or none (a
-- peek). Reset is until the last slot expires, retry until enough of the
-- earliest do: upper bounds, since a release may come first. When it
-- allows a slot, it also returns the last expiry for conc_commit.
local function conc_check(key, limit, d, now, n)
  local used = conc_trim(key, now)
  local w = n > 0 and 1 or 0
  local last = 0
  if used > 0 then last = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]) end
  local reset = used > 0 and last - now or 0
  if used + w <= limit then
    if w == 1 then return true, limit - used - 1, -1, math.max(reset, d), last end
    return true, limit - used, -1, reset
  end
  local k = used + w - limit - 1
  local e = redis.call('ZRANGE', key, k, k, 'WITHSCORES')
  return false, math.max(0, limit - used), tonumber(e[2]) - now, reset
end

-- conc_commit adds slot n, expiring at now + D, and keeps the key until
-- its last slot expires.
local function conc_commit(key, _, d, now, n, last)
  redis.call('ZADD', key, now + d, string.format('%d', n))
  redis.call('PEXPIRE', key, math.ceil((math.max(now + d, last) - now) / 1000))
end

-- settle: adjusts what admitted requests were charged, once their real
-- costs are known. ARGV[1] = 's'; KEYS[i] is the key of settle i, and ARGV
-- then holds six values per settle: algorithm, a, b, at (the admission's
-- Redis time, us), reserved (what it charged; 0 for none) and cost (the
-- real cost, >= 0). Reply: {now_us, then per settle: applied, remaining}:
-- applied is the signed change made (> 0 charged, < 0 refunded), remaining
-- what is left after it, negative in debt.
-- One rule for every algorithm, with d = cost - reserved: a settle adjusts
-- the admission's own record while it still counts; a charge beyond it,
-- once it no longer counts, is charged now; a refund of a record that no
-- longer counts is nothing. reserved = 0 charges cost now. A settle never
-- denies, may overdraw, and is independent of the others of its call.
-- A concurrency limit's settle is a release: reserved is the slot id,
-- cost is unused; applied is -1 when the slot was held, 0 when it had
-- expired or was lost, and remaining is the slots free after it.

if settle then
  -- The TAT moves by d * T, never below now. Applied is the change in
  -- units left, so a refund that empties the funnel counts whole units.
  local function funnel_settle(key, burst, t, now, _, reserved, cost)
    local tau = burst * t
    local tat = tonumber(redis.call('GET', key)) or now
    if tat < now then tat = now end
    local new_tat = math.max(now, tat + (cost - reserved) * t)
    if new_tat > now and new_tat ~= tat then
      redis.call('SET', key, new_tat, 'PX', math.ceil((new_tat - now) / 1000))
    elseif new_tat ~= tat then
      redis.call('DEL', key)
    end
    local left = math.floor((now - new_tat + tau) / t)
    return math.floor((now - tat + tau) / t) - left, left
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
    local d, found, w = cost - reserved, nil, 0
    if reserved > 0 and d ~= 0 and at > now - window then
      local same = redis.call('ZRANGEBYSCORE', key, at, at)
      for i = 1, #same do
        if log_weight(same[i]) == reserved then found = same[i] break end
      end
    end
    if found then
      redis.call('ZREM', key, found)
      w = cost
      if w > 0 then log_add(key, at, w) end
    elseif d > 0 then
      w = d
      log_add(key, now, w)
      log_expire(key, window)
    else
      d = 0
    end
    if weighted or w > 1 then redis.call('ZADD', key, -(total + d), 's') end
    return d, limit - total - d
  end

  -- A release: the slot leaves, unless it has expired already.
  local function conc_settle(key, limit, _, now, _, slot)
    local used = conc_trim(key, now)
    local gone = redis.call('ZREM', key, string.format('%d', slot))
    return -gone, limit - used + gone
  end

  local settles = {l = log_settle, c = counter_settle, f = funnel_settle, k = conc_settle}
  if #ARGV ~= 1 + 6 * #KEYS then
    return redis.error_reply('ERR ratelimit: bad settle argument count')
  end
  -- Every settle is read before any is applied: a bad one writes nothing.
  local args = {}
  for i = 1, #KEYS do
    local j = 6 * i - 4
    local a, b, at, reserved, cost = tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4]), tonumber(ARGV[j + 5])
    if not settles[ARGV[j]] or not a or not b or not at or not reserved or not cost or a < 1 or b < 1 or reserved < 0 or cost < 0 then
      return redis.error_reply('ERR ratelimit: bad arguments for settle ' .. i)
    end
    args[i] = {a, b, at, reserved, cost}
  end
  local reply = {now}
  for i = 1, #KEYS do
    local s = args[i]
    reply[2 * i], reply[2 * i + 1] = settles[ARGV[6 * i - 4]](KEYS[i], s[1], s[2], now, s[3], s[4], s[5])
  end
  return reply
end

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
    if flags % 2 == 1 then tier = redis.call('GET', KEYS[k]); k = k + 1 end
    if flags % 4 >= 2 then over = redis.call('GET', KEYS[k]); k = k + 1 end
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

-- decide_all: any other shape, once every algorithm is defined.
-- Two phases: every limit is checked without charging (a check may trim
-- entries that left the window), then, only if all allow, each is charged.
-- If any limit denies, nothing is charged. A check-only limit (cost -1)
-- is checked as a cost of 1, reported as a peek and never charged.

local checks = {l = log_check, c = counter_check, f = funnel_check, k = conc_check}
local commits = {l = log_commit, c = counter_commit, f = funnel_commit, k = conc_commit}

-- One limit: as decide.lua decides one funnel.
if not grouped and #KEYS == nb + 1 then
  local check, commit = checks[ARGV[2]], commits[ARGV[2]]
  local key, a, b, cost = KEYS[nb + 1], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
  if not check or not a or not b or not cost or cost < -1 then
    return redis.error_reply('ERR ratelimit: bad arguments for limit 1')
  end
  local allowed, remaining, retry, reset, s1, s2 = check(key, a, b, now, cost == -1 and 1 or cost)
  if allowed and cost == -1 then
    allowed, remaining, retry, reset = check(key, a, b, now, 0)
  elseif allowed and cost ~= 0 then
    commit(key, a, b, now, cost, s1, s2)
  end
  return {now, -2, allowed and 1 or 0, a, remaining, retry, reset}
end

if not grouped then -- choice.lua filled the limits of a grouped call
  for i = 1, #KEYS - nb do
    local j = 4 * i - 2
    lk[i], lc[i], la[i], lb[i], ln[i] = KEYS[nb + i], ARGV[j], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  end
end

-- A throttle's funnels decide as of the time the request conforms to all
-- of them (as a request arriving then would), when that is within its max
-- delay: at, the latest such time of the call's throttles. Each funnel is
-- then charged as of at, and the request is to wait until at. A throttle
-- whose time is beyond its max delay decides now, and denies. The call's
-- other funnels decide now, and are charged as of at too.
local at, late = now, {}
if grouped then
  for _, c in ipairs(picks) do
    if c[8] then
      local first, count, cost, conform = c[3], c[4], c[6], now
      for i = first, first + count - 1 do
        if lc[i] == 'f' and la[i] and lb[i] then
          local tat = tonumber(redis.call('GET', lk[i])) or now
          conform = math.max(conform, math.max(tat, now) + (cost - la[i]) * lb[i])
        end
      end
      if conform - now <= c[8] then
        at = math.max(at, conform)
        for i = first, first + count - 1 do late[i] = lc[i] == 'f' end
      end
    end
  end
end

-- Phase one writes each limit's verdict into res, five values per limit,
-- and keeps in state[i] what its check returned for its commit.
local n = #lk
local res, state, all = {}, {}, true
for i = 1, n do
  local r, check, a, b, cost = 5 * i - 4, checks[lc[i]], la[i], lb[i], ln[i]
  if not check or not a or not b or not cost or cost < -1 then
    return redis.error_reply('ERR ratelimit: bad arguments for limit ' .. i)
  end
  local t = late[i] and at or now
  local allowed, remaining, retry, reset, s1, s2 = check(lk[i], a, b, t, cost == -1 and 1 or cost)
  reset = reset + t - now
  if not allowed then
    all = false
  elseif cost == -1 then
    allowed, remaining, retry, reset = check(lk[i], a, b, now, 0)
  elseif at > now and lc[i] == 'f' and cost > 0 and not late[i] then
    -- Admitted now, it goes on at at: charged as a request arriving then.
    local _, _, _, _, t1 = check(lk[i], a, b, at, cost)
    s1 = t1
  end
  res[r], res[r + 1], res[r + 2], res[r + 3], res[r + 4] = allowed and 1 or 0, a, remaining, retry, reset
  state[i] = {s1, s2}
end

-- A lease takes what every limit of its choice has left, up to its most:
-- each is checked again at the larger cost, which then fits.
if all and grouped then
  for _, c in ipairs(picks) do
    local first, count, most, cost = c[3], c[4], c[5], c[6]
    if most then
      local extra = at > now and 0 or most - cost -- a held call takes no batch
      for i = first, first + count - 1 do
        if lc[i] == 'k' then extra = 0 end
        extra = math.min(extra, res[5 * i - 2])
      end
      if extra > 0 then
        for i = first, first + count - 1 do
          local r = 5 * i - 4
          ln[i] = ln[i] + extra
          local _, remaining, retry, reset, s1, s2 = checks[lc[i]](lk[i], la[i], lb[i], now, ln[i])
          res[r + 2], res[r + 3], res[r + 4], state[i] = remaining, retry, reset, {s1, s2}
        end
      end
      c[7] = cost + math.max(extra, 0)
    end
  end
end

for i = 1, n do
  local r, s = 5 * i - 4, state[i]
  if all then
    if ln[i] > 0 then commits[lc[i]](lk[i], la[i], lb[i], now, ln[i], s[1], s[2]) end
  elseif res[r] == 1 then
    -- Another limit denied: report what this one has left, uncharged.
    local allowed
    allowed, res[r + 2], res[r + 3], res[r + 4] = checks[lc[i]](lk[i], la[i], lb[i], now, 0)
    res[r] = allowed and 1 or 0
  end
end

local reply = {now, -2}
if not grouped then
  for i = 1, 5 * n do reply[i + 2] = res[i] end
  return reply
end
local np, codes = tonumber(ARGV[3]), {l = 1, c = 2, f = 3, k = 4}
for i = 1, 5 * np do reply[i + 2] = res[i] end
for _, c in ipairs(picks) do
  local pick, m, first, count = c[1], c[2], c[3], c[4]
  reply[#reply + 1] = pick
  if c[5] then reply[#reply + 1] = c[7] or 0 end
  if c[8] then reply[#reply + 1] = all and at - now or 0 end
  for p = 1, m do
    local i = first + p - 1
    if p <= count then
      local r, at = 5 * i - 4, #reply
      reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = res[r], res[r + 1], res[r + 2], res[r + 3], res[r + 4]
      reply[at + 6], reply[at + 7] = codes[lc[i]], lb[i]
    else
      local at = #reply
      reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5], reply[at + 6], reply[at + 7] = 1, 0, 0, -1, 0, 0, 0
    end
  end
end
return reply

