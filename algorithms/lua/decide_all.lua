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
  if not is_state(key) then return role_error(nb + 1) end
  if not check or not a or not b or not cost or cost < -1 or (peek and cost ~= -1) or not bounded(a, b, cost) then
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
  if not is_state(lk[i]) then return redis.error_reply('ERR ratelimit: limit ' .. i .. ' is not a state key') end
  if not check or not a or not b or not cost or cost < -1 or (peek and cost ~= -1) or not bounded(a, b, cost) then
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
end
