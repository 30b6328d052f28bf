-- ARGV: ns, lease_id, epoch, now, cooldown, event_id, owner ('' = any: admin),
--       keep (seconds the ended lease stays readable), actor (the calling token's name),
--       bytes up and down the gateway relayed on it ('' or absent: none recorded)
-- -> {OK, proxy_id} | {MISSING} missing or not the owner's | {REFUSED, reason[, code]}
--    (LEASE_REPLY)
local lkey = k('lease', ARGV[2])
local l = redis.call('HMGET', lkey, 'epoch', 'state', 'client')
if not l[1] or not_owner(l[3], ARGV[7]) then return {LEASE_REPLY.MISSING} end
if l[2] ~= 'active' then return not_active(lkey, l[2]) end
if tonumber(ARGV[3]) ~= tonumber(l[1]) then return {LEASE_REPLY.REFUSED, 'stale epoch'} end
local data = {'epoch', l[1]}
-- The counts stay strings (digits): a Lua number past 1e14 would print as 1e+14.
local up, down = ARGV[10] or '', ARGV[11] or ''
if string.match(up, '^%d+$') and string.match(down, '^%d+$') then
  redis.call('HSET', lkey, 'bytes_up', up, 'bytes_down', down)
  data[#data + 1] = 'bytes_up'
  data[#data + 1] = up
  data[#data + 1] = 'bytes_down'
  data[#data + 1] = down
end
local proxy_id = end_lease(ARGV[2], 'released', tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[8])
  or ''
event(EVENT.LEASE_RELEASED, ARGV[6], ARGV[4], proxy_id, lease_provider(ARGV[2], proxy_id), ARGV[2],
  acted(l[3], ARGV[9], data))
return {LEASE_REPLY.OK, proxy_id}
