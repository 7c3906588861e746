-- decide_all: any other shape, once every algorithm is defined.
-- Two phases: every limit is checked without charging (a check may trim
-- entries that left the window), then, only if all allow, each is charged.
-- If any limit denies, nothing is charged. A check-only limit (cost -1)
-- is checked as a cost of 1, reported as a peek and never charged.

local checks = {l = log_check, c = counter_check, f = funnel_check}
local commits = {l = log_commit, c = counter_commit, f = funnel_commit}
local n = #KEYS - nb

-- One limit: as decide.lua decides one funnel.
if n == 1 then
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

-- Phase one writes each limit's verdict into the reply, and keeps in
-- state[i] what its check returned for its commit.
local reply, state, all = {now, -2}, {}, true
for i = 1, n do
  local j, r = 4 * i - 2, 5 * i - 2
  local check, a, b, cost = checks[ARGV[j]], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  if not check or not a or not b or not cost or cost < -1 then
    return redis.error_reply('ERR ratelimit: bad arguments for limit ' .. i)
  end
  local allowed, remaining, retry, reset, s1, s2 = check(KEYS[nb + i], a, b, now, cost == -1 and 1 or cost)
  if not allowed then
    all = false
  elseif cost == -1 then
    allowed, remaining, retry, reset = check(KEYS[nb + i], a, b, now, 0)
  end
  reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] = allowed and 1 or 0, a, remaining, retry, reset
  state[i] = {b, cost, s1, s2}
end

for i = 1, n do
  local code, key, r, s = ARGV[4 * i - 2], KEYS[nb + i], 5 * i - 2, state[i]
  if all then
    if s[2] > 0 then commits[code](key, reply[r + 1], s[1], now, s[2], s[3], s[4]) end
  elseif reply[r] == 1 then
    -- Another limit denied: report what this one has left, uncharged.
    local allowed
    allowed, reply[r + 2], reply[r + 3], reply[r + 4] = checks[code](key, reply[r + 1], s[1], now, 0)
    reply[r] = allowed and 1 or 0
  end
end
return reply
