-- roles: what each key of a call is, read from its name (filter.keyspace):
-- a rule key "<prefix>{<rule>|<parts>}" ends in "}" (its parts escape
-- braces), and its keys extend it:
--   }:<digits>   the state of a limit: the only keys a call writes
--   }:block      an operator's block: read, never written
--   }:tier       an operator's tier: read, never written
--   }:override   an operator's limits: read, never written
--   <prefix>epoch, with no brace: read, never written (epoch.lua)
-- So whoever holds the filter's credential can change the state of limits,
-- which is what deciding does, but never lift a block, change a tier or
-- an override, or move the epoch: only the operator's credential can.
-- Defines is_state, has_role and role_error.

local function is_state(key)
  return string.find(key, '}:%d+$') ~= nil
end

local function has_role(key, suffix)
  return string.sub(key, -#suffix - 1) == '}' .. suffix
end

local function role_error(i)
  return redis.error_reply('ERR ratelimit: key ' .. i .. ' has the wrong role')
end
