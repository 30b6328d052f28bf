-- The controller's autoscale decision: a pool's desired size.
-- ARGV: ns, name, desired, reason, now, event_id, fence lock, fence token, expected_gen
-- -> {DONE} | {UNCHANGED} | {MISSING} no such pool (or being deleted) | {STALE_GEN} spec
--    changed since | {FENCED_OUT}   (POOL_REPLY)
local name, desired, reason, now_raw = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if fenced_out(ARGV[7], ARGV[8]) then return {POOL_REPLY.FENCED_OUT} end
local pkey = k('pool', name)
local cur = redis.call('HMGET', pkey, 'desired', 'gen', 'deleting')
if not cur[2] or (cur[3] and cur[3] ~= '') then return {POOL_REPLY.MISSING} end
if tonumber(cur[2]) ~= tonumber(ARGV[9]) then return {POOL_REPLY.STALE_GEN} end
if cur[1] == desired then return {POOL_REPLY.UNCHANGED} end
redis.call('HSET', pkey, 'desired', desired)
event(EVENT.POOL_SCALED, ARGV[6], now_raw, '', '', '',
  {'size', desired, 'from_size', cur[1] or '0', 'reason', json_str(reason)}, name)
return {POOL_REPLY.DONE}
