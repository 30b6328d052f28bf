-- Delete a pool: mark it so its controller drains and deletes its members, then removes it
-- (pool_remove.lua); or, keeping its proxies, remove it now and leave its members to the
-- plain fleet (no pool, no pool label, nothing withheld for the pool).
-- ARGV: ns, name, owner (who asks: only the owner may), keep ('1' | '0'), now, event_id,
--       the membership label's key (pool_spec.POOL_LABEL)
-- -> {DONE} | {UNCHANGED} already being deleted | {OWNED, owner, owner_ref} owned by
--    another source | {MISSING} no such pool   (POOL_REPLY)
local name, owner, keep, now_raw, event_id = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local pkey = k('pool', name)
local cur = redis.call('HMGET', pkey, 'owner', 'owner_ref', 'deleting')
if not cur[1] then return {POOL_REPLY.MISSING} end
if cur[1] ~= owner then return {POOL_REPLY.OWNED, cur[1], cur[2] or ''} end
if keep ~= '1' then
  if cur[3] and cur[3] ~= '' then return {POOL_REPLY.UNCHANGED} end
  redis.call('HSET', pkey, 'deleting', now_raw)
  event(EVENT.POOL_DELETING, event_id, now_raw, '', '', '', {'keep_proxies', 'false'}, name)
  return {POOL_REPLY.DONE}
end
local members = redis.call('ZRANGE', k('pool_members', name), 0, -1)
for _, id in ipairs(members) do
  local mkey = k('proxy', id)
  local m = redis.call('HMGET', mkey, 'labels', 'withheld', 'phase', 'lease_id', 'avail_at')
  avail_rem(id)
  redis.call('HDEL', mkey, 'pool')
  if m[2] == 'draining' then redis.call('HDEL', mkey, 'withheld', 'withheld_reason',
    'withheld_at') end
  if m[1] and m[1] ~= '' then
    local labels = cjson.decode(m[1])
    labels[ARGV[7]] = nil
    local raw = '{}'
    if next(labels) then raw = cjson.encode(labels) end
    redis.call('HSET', mkey, 'labels', raw)
  end
  if m[3] == 'ready' and (not m[4] or m[4] == '') then
    avail_add(id, tonumber(m[5]) or 0)
  end
end
redis.call('DEL', pkey, k('pool_members', name), k('avail_pool', name),
  k('pool_status', name), k('pool_refused', name))
redis.call('ZREM', k('pools'), name)
event(EVENT.POOL_DELETED, event_id, now_raw, '', '', '', {'keep_proxies', 'true'}, name)
return {POOL_REPLY.DONE}
