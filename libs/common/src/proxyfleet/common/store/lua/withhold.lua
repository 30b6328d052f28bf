-- Take a proxy out of rotation (drain it, quarantine it) or put a quarantined one back.
-- ARGV: ns, id, kind ('draining' | 'quarantined' | '': back in rotation), reason, now,
--       event_id, actor (the admin's token name; '' for the pool controller), fence lock
--       ('': none), fence token
-- A drained or quarantined proxy leaves every grantable set at once (a lease it has runs
-- on); back in rotation, a ready unleased one is grantable again after its cooldown, and
-- the `blocked` reports from before are forgotten (a pool's rule starts counting anew).
-- -> {OK, pool, previous} changed | {UNCHANGED, pool, current} nothing to do (already so; a
--    drain leaves a quarantined proxy quarantined; only a quarantined proxy goes back)
--    | {MISSING} no such proxy | {FENCED_OUT}   (PROXY_REPLY)
local id, kind, reason, now_raw, event_id = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local actor = ARGV[7]
if fenced_out(ARGV[8], ARGV[9]) then return {PROXY_REPLY.FENCED_OUT} end
local pkey = k('proxy', id)
local p = redis.call('HMGET', pkey, 'phase', 'withheld', 'pool', 'provider', 'lease_id',
  'avail_at')
if not p[1] or p[1] == 'deleted' then return {PROXY_REPLY.MISSING} end
local current, pool, provider = p[2] or '', p[3] or '', p[4] or ''
if kind == current or (kind == 'draining' and current == 'quarantined')
    or (kind == '' and current ~= 'quarantined') then
  return {PROXY_REPLY.UNCHANGED, pool, current}
end
local data = {}
if kind == '' then
  redis.call('HDEL', pkey, 'withheld', 'withheld_reason', 'withheld_at')
  -- Back in rotation by an admin's judgement: the `blocked` reports that quarantined it no
  -- longer count, or its pool's rule would quarantine it again at the next pass.
  redis.call('DEL', k('blocked', id))
  if p[1] == 'ready' and (not p[5] or p[5] == '') then
    avail_add(id, math.max(tonumber(p[6]) or 0, tonumber(now_raw)))
  end
  if actor ~= '' then data = {'by', json_str(actor)} end
  event(EVENT.PROXY_UNQUARANTINED, event_id, now_raw, id, provider, '', data, pool)
  return {PROXY_REPLY.OK, pool, current}
end
avail_rem(id)
redis.call('HSET', pkey, 'withheld', kind, 'withheld_reason', reason, 'withheld_at', now_raw)
data = {'reason', json_str(reason)}
if actor ~= '' then
  data[#data + 1] = 'by'
  data[#data + 1] = json_str(actor)
end
local kinds = {draining = EVENT.PROXY_DRAINED, quarantined = EVENT.PROXY_QUARANTINED}
event(kinds[kind], event_id, now_raw, id, provider, '', data, pool)
return {PROXY_REPLY.OK, pool, current}
