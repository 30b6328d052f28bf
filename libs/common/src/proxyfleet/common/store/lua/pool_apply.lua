-- Declare a pool or change its spec (create or replace, idempotent).
-- ARGV: ns, name, owner, owner_ref, spec (JSON), desired, now, event_id, expected_gen
--       (-1: any), reason (of a change of the desired size), egress_exclusive (the spec's
--       exclusivity mode, '' when it names none)
-- The hash `pool:<name>`: spec, owner, owner_ref, gen, desired, created_at, updated_at,
-- deleting (when a delete was asked for), egress_exclusive (apart from the spec: the grant
-- script reads it with one HGET); `pools`: every pool by creation time.
-- -> {DONE, gen} written | {UNCHANGED, gen} the same spec already | {OWNED, owner,
--    owner_ref} another source owns it | {DELETING} being deleted | {STALE_GEN, gen} not at
--    expected_gen   (POOL_REPLY)
local name, owner, ref, spec, desired = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local now_raw, event_id, expected = ARGV[7], ARGV[8], tonumber(ARGV[9])
local pkey = k('pool', name)
local cur = redis.call('HMGET', pkey, 'owner', 'owner_ref', 'gen', 'spec', 'desired',
  'deleting')
local gen = tonumber(cur[3]) or 0
if cur[1] and cur[1] ~= owner then return {POOL_REPLY.OWNED, cur[1], cur[2] or ''} end
if cur[6] and cur[6] ~= '' then return {POOL_REPLY.DELETING} end
if expected >= 0 and gen ~= expected then return {POOL_REPLY.STALE_GEN, gen} end
if cur[4] == spec and cur[2] == ref then return {POOL_REPLY.UNCHANGED, gen} end
gen = gen + 1
if not cur[1] then
  redis.call('HSET', pkey, 'created_at', now_raw)
  redis.call('ZADD', k('pools'), tonumber(now_raw), name)
end
redis.call('HSET', pkey, 'owner', owner, 'owner_ref', ref, 'spec', spec, 'gen', gen,
  'desired', desired, 'updated_at', now_raw)
if (ARGV[11] or '') ~= '' then
  redis.call('HSET', pkey, 'egress_exclusive', ARGV[11])
else
  redis.call('HDEL', pkey, 'egress_exclusive')
end
event(EVENT.POOL_APPLIED, event_id, now_raw, '', '', '',
  {'gen', tostring(gen), 'owner', json_str(owner)}, name)
if cur[5] ~= desired then
  local data = {'size', desired, 'reason', json_str(ARGV[10])}
  if cur[5] then
    data[#data + 1] = 'from_size'
    data[#data + 1] = cur[5]
  end
  event(EVENT.POOL_SCALED, event_id, now_raw, '', '', '', data, name)
end
return {POOL_REPLY.DONE, gen}
