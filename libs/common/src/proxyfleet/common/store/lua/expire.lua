-- Release every lease past its expiry. ARGV: ns, now, cooldown, limit
-- -> {lease_id, proxy_id, ...}
local now, cooldown, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = redis.call('ZRANGE', k('leases'), '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local out = {}
for _, lease_id in ipairs(ids) do
  local proxy_id = end_lease(lease_id, 'expired', now, cooldown)
  out[#out + 1] = lease_id
  out[#out + 1] = proxy_id or ''
end
return out
