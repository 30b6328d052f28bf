-- ARGV: ns, id, event_id, now, field, value, ...   -> 1 created, 0 exists
-- A new pending proxy is announced (proxy.pending) and its create intent queued, both in
-- the outbox; a proxy stored in another phase (an import, a test seed) is not announced.
local id, event_id, now_raw = ARGV[2], ARGV[3], ARGV[4]
local pkey = k('proxy', id)
if redis.call('EXISTS', pkey) == 1 then return 0 end
for i = 5, #ARGV, 2 do redis.call('HSET', pkey, ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', k('proxies'), 0, id)
local p = redis.call('HMGET', pkey, 'provider', 'phase', 'gen')
redis.call('HINCRBY', k('counts', p[1]), p[2], 1)
if p[2] == 'pending' then
  event('proxy.pending', event_id, now_raw, id, p[1], '', {'from', '""', 'gen', p[3] or '0'})
  intent_create(p[1], id)
end
return 1
