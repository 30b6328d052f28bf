-- A pool's event that comes with no other change (a condition that changed, a recycle
-- that began): appended to the outbox by the pool's controller.
-- ARGV: ns, name, event type (pool.*), now, event_id, fence lock, fence token, then the
--       event's data as key, JSON value, key, JSON value, ...
-- -> {1} | {-4} no such pool | {-9} fenced out
if fenced_out(ARGV[6], ARGV[7]) then return {-9} end
if redis.call('EXISTS', k('pool', ARGV[2])) == 0 then return {-4} end
local data = {}
for i = 8, #ARGV do data[#data + 1] = ARGV[i] end
event(ARGV[3], ARGV[5], ARGV[4], '', '', '', data, ARGV[2])
return {1}
