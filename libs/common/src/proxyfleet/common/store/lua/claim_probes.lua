-- Claim the proxies whose probe is due and push their next probe one interval ahead, so
-- that replicas sharing the work never probe a proxy twice in an interval.
-- ARGV: ns, now, interval, limit -> { {field, value, ...}, ... }
local now, interval, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = redis.call('ZRANGE', k('probe'), '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local out = {}
for _, id in ipairs(ids) do
  redis.call('ZADD', k('probe'), 'XX', now + interval, id)
  local h = redis.call('HGETALL', k('proxy', id))
  if #h > 0 then out[#out + 1] = h else redis.call('ZREM', k('probe'), id) end
end
return out
