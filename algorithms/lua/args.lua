-- args: what every entry point (decide, settle, epoch) shares: the bounds
-- on a call's arguments, its error replies, and the clock.

-- max_keys bounds one call (the filter sends far fewer), max_number every
-- number argument: 2^53, exact in a double.
local max_keys, max_number = 256, 9007199254740992

-- whole is whether x is a whole number from least to max_number: every
-- count, cost, time and limit argument is one (nil, NaN, 1.5 and 1e300
-- are not).
local function whole(x, least)
  return x ~= nil and x >= least and x <= max_number and x % 1 == 0
end

-- whole_limit is whether a limit's a and b, and a cost of at least least,
-- are whole numbers (a and b at least 1).
local function whole_limit(a, b, cost, least)
  return whole(a, 1) and whole(b, 1) and whole(cost, least)
end

-- bad is the error reply of a malformed call.
local function bad(what)
  return redis.error_reply('ERR ratelimit: ' .. what)
end

-- read_only is set by each entry point: true in a peek, which Redis runs
-- as a no-writes function (FCALL_RO, and under maxmemory). A check then
-- counts around the entries that left the window instead of trimming them.
local read_only = false

-- clock_us is Redis's clock in microseconds, the one every proxy shares.
-- TIME replies {seconds, microseconds}.
local function clock_us()
  local time = redis.call('TIME')
  return time[1] * 1000000 + time[2]
end
