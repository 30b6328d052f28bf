-- Shared helpers, prepended to every script. KEYS are not used: every script runs on a
-- single Redis (see docs/architecture.md, decision log) and builds keys from ARGV[1], the
-- namespace.
local ns = ARGV[1]
local function k(...) return ns .. ':' .. table.concat({...}, ':') end

local function avail_keys(provider, zone)
  return { k('avail'), k('avail', provider), k('avail', provider, zone) }
end

local function avail_add(id, score)
  local p = redis.call('HMGET', k('proxy', id), 'provider', 'zone')
  for _, key in ipairs(avail_keys(p[1], p[2])) do redis.call('ZADD', key, score, id) end
end

local function avail_rem(id)
  local p = redis.call('HMGET', k('proxy', id), 'provider', 'zone')
  for _, key in ipairs(avail_keys(p[1], p[2])) do redis.call('ZREM', key, id) end
end

-- End a lease: tombstone it (so a late report/release gets a clear 409) and free the proxy.
local function end_lease(lease_id, state, now, cooldown)
  local lkey = k('lease', lease_id)
  local proxy_id = redis.call('HGET', lkey, 'proxy_id')
  redis.call('HSET', lkey, 'state', state, 'ended_at', now)
  redis.call('EXPIRE', lkey, 86400)
  redis.call('ZREM', k('leases'), lease_id)
  if not proxy_id then return false end
  local pkey = k('proxy', proxy_id)
  if redis.call('HGET', pkey, 'lease_id') == lease_id then
    local avail_at = now + cooldown
    redis.call('HSET', pkey, 'lease_id', '', 'avail_at', avail_at)
    if redis.call('HGET', pkey, 'phase') == 'ready' then avail_add(proxy_id, avail_at) end
  end
  return proxy_id
end
