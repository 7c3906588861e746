-- args: what every entry point (decide, settle, epoch) shares: the bounds
-- on a call's arguments, its error replies, and the clock.

-- max_keys bounds one call (the filter sends far fewer), max_number every
-- number argument: 2^53, exact in a double.
local max_keys, max_number = 256, 9007199254740992

local function bounded(a, b, c)
  return math.abs(a) <= max_number and math.abs(b) <= max_number and math.abs(c) <= max_number
end

-- bad is the error reply of a malformed call.
local function bad(what)
  return redis.error_reply('ERR ratelimit: ' .. what)
end

-- clock_us is Redis's clock in microseconds, the one every proxy shares.
-- TIME replies {seconds, microseconds}.
local function clock_us()
  local time = redis.call('TIME')
  return time[1] * 1000000 + time[2]
end
