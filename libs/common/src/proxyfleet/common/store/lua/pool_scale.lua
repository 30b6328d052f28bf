-- The controller's autoscale decision: a pool's desired size.
-- ARGV: ns, name, desired, reason, now, event_id, fence lock, fence token, expected_gen
-- -> {1} | {0} unchanged | {-4} no such pool (or being deleted) | {-3} spec changed since
--    | {-9} fenced out
local name, desired, reason, now_raw = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if fenced_out(ARGV[7], ARGV[8]) then return {-9} end
local pkey = k('pool', name)
local cur = redis.call('HMGET', pkey, 'desired', 'gen', 'deleting')
if not cur[2] or (cur[3] and cur[3] ~= '') then return {-4} end
if tonumber(cur[2]) ~= tonumber(ARGV[9]) then return {-3} end
if cur[1] == desired then return {0} end
redis.call('HSET', pkey, 'desired', desired)
event('pool.scaled', ARGV[6], now_raw, '', '', '',
  {'size', desired, 'from_size', cur[1] or '0', 'reason', json_str(reason)}, name)
return {1}
