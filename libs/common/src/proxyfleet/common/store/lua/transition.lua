-- Atomic, generation-checked transition (or field update when to == '').
-- ARGV: ns, id, expected_gen (-1: any), allowed_from (comma list, '' = any), to, now,
--       deleted_ttl, unleased_only ('1': refuse while a lease holds the proxy), event_id,
--       delete_reason (of the delete intent a move to deleting queues), field, value, ...
-- A transition appends its event (proxy.<to>), lease.revoked when it ends a lease, and the
-- delete intent of a proxy moving to failed (but an external one) or deleting, to the
-- outbox.
-- A `zone` field that differs moves the proxy between the per-zone availability sets
-- (grants select by zone) in this same step; a transition's event then says so
-- (`zone`, `from_zone`).
-- -> {OK, new_gen, old_phase, ended_lease_id} | {MISSING} | {STALE_GEN, gen, phase}
--    | {PHASE_REFUSED, gen, phase} not allowed from the current phase
--    | {LEASED, gen, phase, lease_id}   (PROXY_REPLY)
local id, expected, allowed, to, now = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6]
local deleted_ttl = tonumber(ARGV[7])
local pkey = k('proxy', id)
local cur = redis.call('HMGET', pkey, 'gen', 'phase', 'provider', 'lease_id', 'avail_at', 'zone',
  'pool', 'withheld', 'withheld_reason')
if not cur[1] then return {PROXY_REPLY.MISSING} end
local gen, phase = tonumber(cur[1]), cur[2]
if expected >= 0 and gen ~= expected then return {PROXY_REPLY.STALE_GEN, gen, phase} end
if allowed ~= '' and not string.find(',' .. allowed .. ',', ',' .. phase .. ',', 1, true) then
  return {PROXY_REPLY.PHASE_REFUSED, gen, phase}
end
-- Only an external proxy comes back from failed: a managed one's delete is queued.
if phase == 'failed' and to == 'ready' and redis.call('HGET', pkey, 'external') ~= '1' then
  return {PROXY_REPLY.PHASE_REFUSED, gen, phase}
end
if ARGV[8] == '1' and cur[4] and cur[4] ~= '' then return {PROXY_REPLY.LEASED, gen, phase, cur[4]} end
local from_zone, to_zone = '', ''
for i = 11, #ARGV, 2 do
  if ARGV[i] == 'zone' and ARGV[i + 1] ~= (cur[6] or '') then
    from_zone, to_zone = cur[6] or '', ARGV[i + 1]
  end
end
if to_zone ~= '' then
  local ip = redis.call('HGET', pkey, 'egress_ip')
  if ip and ip ~= '' then  -- its exit address now counts in the new zone
    egress_count({'zone:' .. (cur[3] or '') .. ':' .. from_zone}, ip, -1)
    egress_count({'zone:' .. (cur[3] or '') .. ':' .. to_zone}, ip, 1)
  end
  local old_key = k('avail', cur[3], from_zone)
  local score = redis.call('ZSCORE', old_key, id)
  if score then
    redis.call('ZREM', old_key, id)
    redis.call('ZADD', k('avail', cur[3], to_zone), score, id)
  end
end
for i = 11, #ARGV, 2 do redis.call('HSET', pkey, ARGV[i], ARGV[i + 1]) end
if to == '' then return {PROXY_REPLY.OK, gen, phase, ''} end

local new_gen = gen + 1
redis.call('HSET', pkey, 'phase', to, 'gen', new_gen, 'updated_at', now)
redis.call('HINCRBY', k('counts', cur[3]), phase, -1)
redis.call('HINCRBY', k('counts', cur[3]), to, 1)
-- Out of its provider's index once deleted (its hash expires later: nothing is left
-- behind); added again on every other move, which heals a proxy a version from before the
-- index stored (a rolling upgrade) at its next transition.
if to == 'deleted' then
  index_rem(cur[3], id)
  member_rem(cur[7], id)
  egress_forget(id)
else
  index_add(cur[3], id)
end

-- A failed external proxy stays on the probe schedule: health probes it with backoff
-- (claim_probes.lua), and a good probe makes it ready again.
if PROBED[to] or (to == 'failed' and redis.call('HGET', pkey, 'external') == '1') then
  if not PROBED[phase] then
    redis.call('ZADD', k('probe'), now, id)
  end
else
  redis.call('ZREM', k('probe'), id)
end

local ended = ''
if to == 'ready' then
  if cur[4] == '' or not cur[4] then avail_add(id, tonumber(cur[5]) or 0) end
else
  avail_rem(id)
  -- A lease on a proxy that stops serving is revoked with it, so its holder hears at once
  -- (lease.revoked; renew/report answer why) instead of at expiry.
  if (to == 'deleting' or to == 'failed' or to == 'deleted' or to == 'unhealthy')
      and cur[4] and cur[4] ~= '' then
    end_lease(cur[4], 'revoked', tonumber(now), 0)
    ended = cur[4]
  end
end
if to == 'deleted' then
  redis.call('EXPIRE', pkey, deleted_ttl)
  -- The tombstone outlives the entry: re-adoption never brings a deleted proxy back.
  redis.call('ZADD', k('tombstones'), now, id)
  redis.call('ZREMRANGEBYSCORE', k('tombstones'), '-inf', tonumber(now) - 30 * 86400)
end

local event_id, now_raw, provider = ARGV[9], ARGV[6], cur[3] or ''
local data = {'from', json_str(phase), 'gen', tostring(new_gen)}
if to_zone ~= '' then
  data[#data + 1] = 'zone'
  data[#data + 1] = json_str(to_zone)
  data[#data + 1] = 'from_zone'
  data[#data + 1] = json_str(from_zone)
end
local reason = ''
if to == 'failed' or to == 'unhealthy' then
  reason = redis.call('HGET', pkey, 'reason') or ''
  data[#data + 1] = 'reason'
  data[#data + 1] = json_str(reason)
end
event('proxy.' .. to, event_id, now_raw, id, provider, '', data)
if ended ~= '' then
  local why = 'proxy deleted'
  if cur[8] == 'draining' and cur[9] and cur[9] ~= '' then
    why = cur[9]  -- a drained member deleted past its drain timeout: why it was drained
  elseif to == 'failed' or to == 'unhealthy' then
    why = 'proxy ' .. to .. ((reason ~= '') and (': ' .. reason) or '')
  end
  redis.call('HSET', k('lease', ended), 'reason', why)
  local owner = redis.call('HGET', k('lease', ended), 'client')
  event(EVENT.LEASE_REVOKED, event_id, now_raw, id, provider, ended,
    acted(owner, '', {'reason', json_str(why)}))
end
-- A failed external proxy (a static provider's source lists it) is kept, re-probed, until
-- its source drops it: nothing outside Proxyfleet is ever deleted.
if to == 'failed' and redis.call('HGET', pkey, 'external') ~= '1' then
  intent_delete(provider, id, new_gen, reason)
elseif to == 'deleting' then
  intent_delete(provider, id, new_gen, ARGV[10])
end
return {PROXY_REPLY.OK, new_gen, phase, ended}
