-- Register again a proxy whose resource outlived its registry entry (a store reset).
-- ARGV: ns, id, event_id, now, phase ('booting': address known, health probes it;
--       'provisioning': the runner's create adopts the resource and finds its address),
--       hold (seconds before its first grant: a lease from before the reset may still be
--       in use), field, value, ...
-- -> CREATED adopted | EXISTS the proxy exists | TOMBSTONED it was deleted: GC's to remove
--    (CREATE_REPLY)
local id, event_id, now_raw, phase = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local hold = tonumber(ARGV[6]) or 0
local pkey = k('proxy', id)
if redis.call('EXISTS', pkey) == 1 then return CREATE_REPLY.EXISTS end
if redis.call('ZSCORE', k('tombstones'), id) then return CREATE_REPLY.TOMBSTONED end
index_marker_if_empty(now_raw)
for i = 7, #ARGV, 2 do redis.call('HSET', pkey, ARGV[i], ARGV[i + 1]) end
-- Cooling down until the hold ends: the first good probe makes it ready, not grantable.
redis.call('HSET', pkey, 'phase', phase, 'gen', 1, 'updated_at', now_raw,
  'avail_at', tonumber(now_raw) + hold)
redis.call('ZADD', k('proxies'), 0, id)
local provider = redis.call('HGET', pkey, 'provider') or ''
redis.call('HINCRBY', k('counts', provider), phase, 1)
index_add(provider, id)
local pool = redis.call('HGET', pkey, 'pool')
member_add(pool, id, tonumber(redis.call('HGET', pkey, 'created_at')) or 0)
if phase == 'booting' then
  redis.call('ZADD', k('probe'), tonumber(now_raw), id)
else
  intent_create(provider, id)
end
event(EVENT.PROXY_ADOPTED, event_id, now_raw, id, provider, '',
  {'from', '""', 'gen', '1', 'reason', json_str('registry reset: resource adopted')}, pool)
return CREATE_REPLY.CREATED
