-- peek: the entry point that reads a key's limits charging nothing and
-- writing nothing (read_only), so Redis runs it as a no-writes function:
-- with FCALL_RO, on a replica, and on a Redis full under maxmemory. It
-- decides, or settles when ARGV[1] = 's', with every cost -1 or 0.
local function peek(KEYS, ARGV)
  if ARGV[1] == 's' then return settle(KEYS, ARGV, true) end
  return decide(KEYS, ARGV, true)
end
