-- ARGV: ns, id, field, value, ...   -> 1 created, 0 exists
local id = ARGV[2]
local pkey = k('proxy', id)
if redis.call('EXISTS', pkey) == 1 then return 0 end
for i = 3, #ARGV, 2 do redis.call('HSET', pkey, ARGV[i], ARGV[i + 1]) end
redis.call('ZADD', k('proxies'), 0, id)
local p = redis.call('HMGET', pkey, 'provider', 'phase')
redis.call('HINCRBY', k('counts', p[1]), p[2], 1)
return 1
