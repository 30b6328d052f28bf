-- ARGV: ns, lease_id, epoch, now, ttl, event_id, owner ('' = any: admin), actor (the
--       calling token's name)
-- -> {OK, expires_at, proxy_id} | {MISSING} missing or not the owner's
--    | {REFUSED, reason[, code]}   (LEASE_REPLY)
local lkey = k('lease', ARGV[2])
local l = redis.call('HMGET', lkey, 'epoch', 'state', 'expires_at', 'proxy_id', 'client')
if not l[1] or not_owner(l[5], ARGV[7]) then return {LEASE_REPLY.MISSING} end
if l[2] ~= 'active' then return not_active(lkey, l[2]) end
if tonumber(ARGV[3]) ~= tonumber(l[1]) then return {LEASE_REPLY.REFUSED, 'stale epoch'} end
local now = tonumber(ARGV[4])
if tonumber(l[3]) <= now then return {LEASE_REPLY.REFUSED, 'lease has expired'} end
local expires = now + tonumber(ARGV[5])
redis.call('HSET', lkey, 'expires_at', expires)
redis.call('ZADD', k('leases'), expires, ARGV[2])
event(EVENT.LEASE_RENEWED, ARGV[6], ARGV[4], l[4], lease_provider(ARGV[2], l[4]), ARGV[2],
  acted(l[5], ARGV[8], {'epoch', l[1], 'expires_at', tostring(expires)}))
return {LEASE_REPLY.OK, tostring(expires), l[4]}
