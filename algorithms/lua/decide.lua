-- decide: every limit of one request, all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c' or 'f'), a, b, cost.
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists. If any limit denies, nothing is written.
-- Needs Redis >= 5, where scripts replicate their effects, so TIME may
-- precede writes.

local function check(kind, key, now, a, b, n)
  if kind == 'f' then return funnel_check(key, now, a, b, n) end
  if kind == 'l' then return log_check(key, now, a, b, n) end
  if kind == 'c' then return counter_check(key, now, a, b, n) end
end

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

-- out holds 12 slots per limit: algorithm, a, b, cost, then allowed,
-- remaining, retry, reset and up to four values of state for the commit.
local out, all = {}, true
local n = #KEYS - nb
for i = 1, n do
  local j, o = 4 * i - 2, 12 * i - 12
  local kind, a, b, cost = ARGV[j], tonumber(ARGV[j + 1]), tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3])
  if not a or not b or not cost or (kind ~= 'f' and kind ~= 'l' and kind ~= 'c') then
    return redis.error_reply('ERR ratelimit: bad arguments for limit ' .. i)
  end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = kind, a, b, cost
  out[o + 5], out[o + 6], out[o + 7], out[o + 8], out[o + 9], out[o + 10], out[o + 11], out[o + 12] =
    check(kind, KEYS[nb + i], now, a, b, cost)
  if not out[o + 5] then all = false end
end

local reply = {now, -2}
for i = 1, n do
  local o, key = 12 * i - 12, KEYS[nb + i]
  local kind, a, b, cost = out[o + 1], out[o + 2], out[o + 3], out[o + 4]
  local ok, rem, retry, reset = out[o + 5], out[o + 6], out[o + 7], out[o + 8]
  if all then
    -- A cost of 0 peeks: decided like any other, it writes nothing.
    if cost == 0 then
    elseif kind == 'f' then funnel_commit(key, now, a, b, cost, out[o + 9])
    elseif kind == 'l' then log_commit(key, now, a, b, cost)
    else counter_commit(key, now, a, b, cost, out[o + 9], out[o + 10], out[o + 11], out[o + 12]) end
  elseif ok then
    ok, rem, retry, reset = check(kind, key, now, a, b, 0)
  end
  local r = 5 * i - 2
  reply[r], reply[r + 1], reply[r + 2], reply[r + 3], reply[r + 4] = ok and 1 or 0, a, rem, retry, reset
end
return reply
