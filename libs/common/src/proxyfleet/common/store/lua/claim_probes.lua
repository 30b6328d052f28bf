-- Claim the proxies whose probe is due and push their next probe one interval ahead, so
-- that replicas sharing the work never probe a proxy twice in an interval.
-- ARGV: ns, now, interval, limit -> { {field, value, ...}, ... }
local now, interval, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = redis.call('ZRANGE', k('probe'), '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
local out = {}
for _, id in ipairs(ids) do
  -- Next probe one interval after this one was due (no drift by the claim's lateness),
  -- but never in the past (a backlog must not make a proxy due twice in an interval).
  local next_ = tonumber(redis.call('ZSCORE', k('probe'), id)) + interval
  if next_ <= now then next_ = now + interval end
  redis.call('ZADD', k('probe'), 'XX', next_, id)
  local h = redis.call('HGETALL', k('proxy', id))
  if #h > 0 then out[#out + 1] = h else redis.call('ZREM', k('probe'), id) end
end
return out
