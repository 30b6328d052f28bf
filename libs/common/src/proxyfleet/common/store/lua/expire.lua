-- Release every lease past its expiry, announcing each (lease.expired).
-- ARGV: ns, now, cooldown, limit, event_id, keep (seconds an ended lease stays readable)
-- -> {lease_id, proxy_id, ...}
local now, cooldown, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = redis.call('ZRANGE', k('leases'), '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local out = {}
for _, lease_id in ipairs(ids) do
  local l = redis.call('HMGET', k('lease', lease_id), 'epoch', unpack(LEASE_ENDS))
  local epoch = table.remove(l, 1)
  local proxy_id, provider = end_lease(lease_id, 'expired', now, cooldown, ARGV[6], l)
  proxy_id = proxy_id or ''
  event(EVENT.LEASE_EXPIRED, ARGV[5], ARGV[2], proxy_id, provider, lease_id,
    acted(l[6], '', {'epoch', epoch or '0'}))
  out[#out + 1] = lease_id
  out[#out + 1] = proxy_id
end
return out
