-- A pool's event that comes with no other change (a condition that changed, a recycle
-- that began): appended to the outbox by the pool's controller.
-- ARGV: ns, name, event type (pool.*), now, event_id, fence lock, fence token, then the
--       event's data as key, JSON value, key, JSON value, ...
-- -> {DONE} | {MISSING} no such pool | {FENCED_OUT}   (POOL_REPLY)
if fenced_out(ARGV[6], ARGV[7]) then return {POOL_REPLY.FENCED_OUT} end
if redis.call('EXISTS', k('pool', ARGV[2])) == 0 then return {POOL_REPLY.MISSING} end
local data = {}
for i = 8, #ARGV do data[#data + 1] = ARGV[i] end
event(ARGV[3], ARGV[5], ARGV[4], '', '', '', data, ARGV[2])
return {POOL_REPLY.DONE}
