-- decide: every limit of one request, all-or-nothing, on one Redis clock.
-- ARGV[1] = nb, the number of block keys; KEYS[1..nb] are block keys and
-- KEYS[nb+i] is the key of limit i. ARGV then holds four values per limit:
-- algorithm ('l', 'c' or 'f'), a, b, cost.
-- Reply: {now_us, -2, then per limit: allowed, limit, remaining,
-- retry_after_us, reset_after_us}, or {now_us, block_pttl_ms, block_index}
-- when a block key exists. If any limit denies, nothing is written.
-- The integers are sent as decimal strings: HTTP gateways such as Webdis
-- mangle arrays of integer replies, and never strings.
local algorithms = {
  l = {log_check, log_commit},
  c = {counter_check, counter_commit},
  f = {funnel_check, funnel_commit},
}

local function int(x) return string.format('%d', x) end

if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nb = tonumber(ARGV[1])
if not nb or nb < 0 or nb > #KEYS then
  return redis.error_reply('ERR ratelimit: bad block key count')
end
for i = 1, nb do
  local blocked = redis.call('PTTL', KEYS[i])
  if blocked ~= -2 then return {int(now), int(blocked), int(i)} end
end

local limits, results, all = {}, {}, true
for i = nb + 1, #KEYS do
  local j = (i - nb - 1) * 4 + 1
  local algo = algorithms[ARGV[j + 1]]
  local a, b, n = tonumber(ARGV[j + 2]), tonumber(ARGV[j + 3]), tonumber(ARGV[j + 4])
  if not algo or not a or not b or not n then
    return redis.error_reply('ERR ratelimit: bad arguments for limit ' .. (i - nb))
  end
  limits[i] = {algo, a, b, n}
  local r = {algo[1](KEYS[i], now, a, b, n)}
  results[i] = r
  if not r[1] then all = false end
end

local reply = {int(now), '-2'}
for i = nb + 1, #KEYS do
  local algo, a, b, n = unpack(limits[i])
  local r = results[i]
  if all then
    algo[2](KEYS[i], now, a, b, n, unpack(r, 5))
  elseif r[1] then
    r = {algo[1](KEYS[i], now, a, b, 0)}
  end
  local ok = '0'
  if r[1] then ok = '1' end
  reply[#reply + 1] = ok
  reply[#reply + 1] = int(a)
  reply[#reply + 1] = int(r[2])
  reply[#reply + 1] = int(r[3])
  reply[#reply + 1] = int(r[4])
end
return reply
