-- roles: what each key of a call is, read from its name (filter.keyspace):
-- a rule key "<prefix>{<rule>|<parts>}" ends in "}" (its parts escape
-- braces), and its keys extend it:
--   }:<digits>   the state of a limit: the only keys a call writes
--   }:block      an operator's block: read, never written
--   }:tier       an operator's tier: read, never written
--   }:override   an operator's limits: read, never written
--   <prefix>epoch, with no brace: read, never written
-- So whoever holds the filter's credential can change the state of limits,
-- which is what deciding does, but never lift a block, change a tier or
-- an override, or move the epoch: only the operator's credential can.

-- max_keys bounds one call (the filter sends far fewer), max_number every
-- number argument: 2^53, exact in a double.
local max_keys, max_number = 256, 9007199254740992

local function is_state(key)
  return string.find(key, '}:%d+$') ~= nil
end

local function has_role(key, suffix)
  return string.sub(key, -#suffix - 1) == '}' .. suffix
end

local function role_error(i)
  return redis.error_reply('ERR ratelimit: key ' .. i .. ' has the wrong role')
end

local function bounded(a, b, c)
  return math.abs(a) <= max_number and math.abs(b) <= max_number and math.abs(c) <= max_number
end

-- epoch reads the epoch an operator's change bumps, KEYS[1]: the number,
-- 0 when unset.
local function epoch(KEYS, ARGV)
  local key = KEYS[1]
  if #KEYS ~= 1 or ARGV[1] ~= 'e' or string.sub(key, -5) ~= 'epoch' or string.find(key, '{', 1, true) then
    return redis.error_reply('ERR ratelimit: bad epoch read')
  end
  return tonumber(redis.call('GET', key)) or 0
end
