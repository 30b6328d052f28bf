-- ARGV: ns, lease_id, epoch, now, outcome, target, ban_seconds, event_id, owner ('' = any),
--       actor (the calling token's name)
-- -> {OK, proxy_id, target} | {MISSING} missing or not the owner's
--    | {REFUSED, reason[, code]}   (LEASE_REPLY)
local lkey = k('lease', ARGV[2])
local l = redis.call('HMGET', lkey, 'epoch', 'state', 'proxy_id', 'target', 'client')
if not l[1] or not_owner(l[5], ARGV[9]) then return {LEASE_REPLY.MISSING} end
if l[2] ~= 'active' then return not_active(lkey, l[2]) end
if tonumber(ARGV[3]) ~= tonumber(l[1]) then return {LEASE_REPLY.REFUSED, 'stale epoch'} end
local now, outcome, target = tonumber(ARGV[4]), ARGV[5], ARGV[6]
if target == '' then target = l[4] end
if outcome == 'blocked' and target ~= '' then
  redis.call('ZADD', k('ban', target), now + tonumber(ARGV[7]), l[3])
  -- The targets that blocked this proxy, by when they last did (a pool's quarantine
  -- counts those within its window); a day of them is kept.
  local bkey = k('blocked', l[3])
  redis.call('ZADD', bkey, now, target)
  redis.call('ZREMRANGEBYSCORE', bkey, '-inf', now - 86400)
  redis.call('EXPIRE', bkey, 86400)
elseif outcome == 'failed' then
  redis.call('ZADD', k('probe'), 'XX', now, l[3])
end
redis.call('HINCRBY', lkey, 'reports_' .. outcome, 1)
event(EVENT.LEASE_REPORTED, ARGV[8], ARGV[4], l[3], lease_provider(ARGV[2], l[3]), ARGV[2],
  acted(l[5], ARGV[10], {'epoch', l[1], 'outcome', json_str(outcome), 'target', json_str(target)}))
return {LEASE_REPLY.OK, l[3], target}
