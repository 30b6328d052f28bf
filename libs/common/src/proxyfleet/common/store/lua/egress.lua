-- A proxy's confirmed exit address changes (health, once proxyfleet.common.domain.egress
-- decide_egress confirmed it): atomic and generation-checked, no new generation.
-- ARGV: ns, id, expected_gen (-1: any), now, event_id, ip, net, pending, pending_n,
--       revoke ('1': end the proxy's active lease when an old address is replaced),
--       revoke_reason, shared_with_max, field, value, ... (the probe's streak fields)
-- Moves the proxy between the address index sets and count hashes (_lib.lua
-- egress_forget; constant work however many proxies share the address), and appends proxy.egress_changed (old -> new, when there was an old address),
-- proxy.egress_shared (when others leave through the new one) and lease.revoked.
-- -> {OK, gen, ended_lease_id, shared} | {MISSING} | {STALE_GEN, gen, phase}
--    | {PHASE_REFUSED, gen, phase} not a probed phase (going away: its address no longer
--    counts; a failed external proxy is probed)   (PROXY_REPLY)
local id, expected, now_raw, event_id = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local ip, net, revoke, reason = ARGV[6], ARGV[7], ARGV[10] == '1', ARGV[11]
local shared_max = tonumber(ARGV[12])
local pkey = k('proxy', id)
local cur = redis.call('HMGET', pkey, 'gen', 'phase', 'provider', 'zone', 'pool', 'lease_id',
  'egress_ip')
if not cur[1] then return {PROXY_REPLY.MISSING} end
local gen, phase = tonumber(cur[1]), cur[2]
if expected >= 0 and gen ~= expected then return {PROXY_REPLY.STALE_GEN, gen, phase} end
-- A failed external proxy is still probed (and kept): the probe that makes it ready
-- confirms its address first, as for any proxy turning ready.
if not PROBED[phase] and not (phase == 'failed' and redis.call('HGET', pkey, 'external') == '1') then
  return {PROXY_REPLY.PHASE_REFUSED, gen, phase}
end
for i = 13, #ARGV, 2 do redis.call('HSET', pkey, ARGV[i], ARGV[i + 1]) end
if ARGV[8] == '' then  -- no candidate: absent fields read as empty (and cost no memory)
  redis.call('HDEL', pkey, 'egress_pending', 'egress_pending_n')
else
  redis.call('HSET', pkey, 'egress_pending', ARGV[8], 'egress_pending_n', ARGV[9])
end
local old = cur[7] or ''
if ip == old then
  return {PROXY_REPLY.OK, gen, '', (ip ~= '') and redis.call('SCARD', k('egress', ip)) or 0}
end

egress_forget(id)
redis.call('HSET', pkey, 'egress_ip', ip, 'egress_net', net)
local shared = 0
if ip ~= '' then
  redis.call('SADD', k('egress', ip), id)
  egress_count(egress_groups(cur[3], cur[4], cur[5]), ip, 1)
  shared = redis.call('SCARD', k('egress', ip))
end

local provider = cur[3] or ''
if old ~= '' then
  event(EVENT.PROXY_EGRESS_CHANGED, event_id, now_raw, id, provider, '',
    {'egress_ip', json_str(ip), 'from_egress_ip', json_str(old)})
end
if shared > 1 then
  -- A few of the others, not all: bounded however large the set.
  local others = {}
  for _, other in ipairs(redis.call('SRANDMEMBER', k('egress', ip), shared_max + 1)) do
    if other ~= id and #others < shared_max then others[#others + 1] = json_str(other) end
  end
  event(EVENT.PROXY_EGRESS_SHARED, event_id, now_raw, id, provider, '',
    {'egress_ip', json_str(ip), 'shared_with', '[' .. table.concat(others, ',') .. ']'})
end

-- The lease was granted for the old address: its holder must hear that it is gone.
local ended = ''
local lease_id = cur[6] or ''
if revoke and old ~= '' and lease_id ~= '' then
  end_lease(lease_id, 'revoked', tonumber(now_raw), 0)
  ended = lease_id
  redis.call('HSET', k('lease', ended), 'reason', reason)
  local owner = redis.call('HGET', k('lease', ended), 'client')
  event(EVENT.LEASE_REVOKED, event_id, now_raw, id, provider, ended,
    acted(owner, '', {'reason', json_str(reason)}))
end
return {PROXY_REPLY.OK, gen, ended, shared}
