-- The installation marker: written once (the first writer after an empty store wins),
-- read back by every caller, so all services agree on when this registry began.
-- ARGV: ns, installation_id, now   -> {installation_id, created_at, created ('1'|'0')}
local key = k('installation')
local created = '0'
if redis.call('EXISTS', key) == 0 then
  redis.call('HSET', key, 'installation_id', ARGV[2], 'created_at', ARGV[3])
  created = '1'
end
local m = redis.call('HMGET', key, 'installation_id', 'created_at')
return {m[1] or '', m[2] or '0', created}
