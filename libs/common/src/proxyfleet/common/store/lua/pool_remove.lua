-- Remove a pool being deleted once its last member is gone (its controller's last step).
-- ARGV: ns, name, now, event_id, fence lock, fence token
-- -> {DONE} removed | {UNCHANGED} members remain, or not being deleted | {FENCED_OUT}
--    (POOL_REPLY)
local name, now_raw, event_id = ARGV[2], ARGV[3], ARGV[4]
if fenced_out(ARGV[5], ARGV[6]) then return {POOL_REPLY.FENCED_OUT} end
local pkey = k('pool', name)
local deleting = redis.call('HGET', pkey, 'deleting')
if not deleting or deleting == '' then return {POOL_REPLY.UNCHANGED} end
if redis.call('ZCARD', k('pool_members', name)) > 0 then return {POOL_REPLY.UNCHANGED} end
redis.call('DEL', pkey, k('pool_members', name), k('avail_pool', name),
  k('pool_status', name), k('pool_refused', name))
redis.call('ZREM', k('pools'), name)
event(EVENT.POOL_DELETED, event_id, now_raw, '', '', '', {'keep_proxies', 'false'}, name)
return {POOL_REPLY.DONE}
