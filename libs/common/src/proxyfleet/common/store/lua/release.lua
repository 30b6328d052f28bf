-- ARGV: ns, lease_id, epoch, now, cooldown, event_id, owner ('' = any: admin),
--       keep (seconds the ended lease stays readable), actor (the calling token's name),
--       bytes up and down the gateway relayed on it ('' or absent: none recorded)
-- -> {OK, proxy_id} | {MISSING} missing or not the owner's | {REFUSED, reason[, code]}
--    (LEASE_REPLY)
local lkey = k('lease', ARGV[2])
-- One read: what the checks need, then what end_lease needs (LEASE_ENDS).
local l = redis.call('HMGET', lkey, 'epoch', unpack(LEASE_ENDS))
local epoch, state, client = l[1], l[3], l[7]
if not epoch or not_owner(client, ARGV[7]) then return {LEASE_REPLY.MISSING} end
if state ~= 'active' then return not_active(lkey, state) end
if tonumber(ARGV[3]) ~= tonumber(epoch) then return {LEASE_REPLY.REFUSED, 'stale epoch'} end
table.remove(l, 1)
local data = {'epoch', epoch}
local counts = nil
-- The counts stay strings (digits): a Lua number past 1e14 would print as 1e+14.
local up, down = ARGV[10] or '', ARGV[11] or ''
if string.match(up, '^%d+$') and string.match(down, '^%d+$') then
  counts = {'bytes_up', up, 'bytes_down', down}
  for _, v in ipairs(counts) do data[#data + 1] = v end
end
local proxy_id, provider = end_lease(ARGV[2], 'released', tonumber(ARGV[4]), tonumber(ARGV[5]),
  ARGV[8], l, counts)
proxy_id = proxy_id or ''
event(EVENT.LEASE_RELEASED, ARGV[6], ARGV[4], proxy_id, provider, ARGV[2],
  acted(client, ARGV[9], data))
return {LEASE_REPLY.OK, proxy_id}
