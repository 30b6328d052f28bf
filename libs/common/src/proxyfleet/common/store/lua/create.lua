-- Store new proxies, all or none past the checks.
-- ARGV: ns, event_id, now, provider (of the limit), max_proxies (-1: none), idem_key
--       ('': none), fingerprint, idem_ttl, n, fence lock ('': none), fence token,
--       the outbox's high-water mark (0: none), then n times: id, nfields, field, value, ...
-- -> {CREATED, created_1, ..., created_n} (each CREATED, or EXISTS: the id exists; an
--    external proxy's deleted record is taken over, not EXISTS)
--    | {REPLAYED, id, ...} the ids the first create with this key made
--    | {OVER_MAX, existing, max} past max_proxies | {KEY_REUSED} the key was used with
--    another body | {FENCED_OUT} the lock is not the token's | {BACKLOG, outbox length}
--    (CREATE_REPLY)
-- A new pending proxy is announced (proxy.pending) and its create intent queued, both in
-- the outbox; a proxy stored in another phase (an import, a test seed) is not announced.
local event_id, now_raw, provider = ARGV[2], ARGV[3], ARGV[4]
local max, idem, fingerprint = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local n = tonumber(ARGV[9])
if fenced_out(ARGV[10], ARGV[11]) then return {CREATE_REPLY.FENCED_OUT} end

local ikey = (idem ~= '') and k('idem', idem) or nil
if ikey then
  local seen = redis.call('HMGET', ikey, 'fp', 'ids')
  if seen[1] then
    if seen[1] ~= fingerprint then return {CREATE_REPLY.KEY_REUSED} end
    local out = {CREATE_REPLY.REPLAYED}
    for id in string.gmatch(seen[2], '[^,]+') do out[#out + 1] = id end
    return out
  end
end

local backlog = backlogged(tonumber(ARGV[12]))
if backlog then return {CREATE_REPLY.BACKLOG, backlog} end

if max >= 0 then
  -- proxies that hold or will hold resources; the counts are kept by create and
  -- transition, so this check and the writes below are one atomic step
  local c = redis.call('HMGET', k('counts', provider), unpack(COUNTED))
  local existing = 0
  for _, v in ipairs(c) do existing = existing + (tonumber(v) or 0) end
  if existing + n > max then return {CREATE_REPLY.OVER_MAX, existing, max} end
end

-- An external proxy's id comes from its source's line: listed again after it was dropped
-- and forgotten, it takes over its own deleted record (kept `deleted_ttl` for late
-- readers) instead of waiting for it to expire. -> {gen, epoch, provider} or nil.
local function revivable(pkey, first, nfields)
  local old = redis.call('HMGET', pkey, 'phase', 'external', 'gen', 'epoch', 'provider')
  if old[1] ~= 'deleted' or old[2] ~= '1' then return nil end
  for j = first, first + 2 * nfields - 2, 2 do
    if ARGV[j] == 'external' and ARGV[j + 1] == '1' then return {old[3], old[4], old[5]} end
  end
  return nil
end

index_marker_if_empty(now_raw)
local out, ids, i = {CREATE_REPLY.CREATED}, {}, 13
for _ = 1, n do
  local id, nfields = ARGV[i], tonumber(ARGV[i + 1])
  local pkey = k('proxy', id)
  local revived = revivable(pkey, i + 2, nfields)
  if revived then
    -- Its deleted record goes; gen and epoch go on from it (intents, fencing never go back).
    redis.call('DEL', pkey)
    redis.call('HINCRBY', k('counts', revived[3]), 'deleted', -1)
    redis.call('ZREM', k('tombstones'), id)
  end
  if not revived and redis.call('EXISTS', pkey) == 1 then
    out[#out + 1] = CREATE_REPLY.EXISTS
  else
    redis.call('HSET', pkey, unpack(ARGV, i + 2, i + 1 + 2 * nfields))
    if revived then
      redis.call('HSET', pkey, 'gen', (tonumber(revived[1]) or 0) + 1, 'epoch', revived[2] or 0)
    end
    redis.call('ZADD', k('proxies'), 0, id)
    local p = redis.call('HMGET', pkey, 'provider', 'phase', 'gen', 'pool', 'created_at')
    redis.call('HINCRBY', k('counts', p[1]), p[2], 1)
    if p[2] ~= 'deleted' then
      index_add(p[1], id)
      member_add(p[4], id, tonumber(p[5]) or 0)
    end
    if p[2] == 'pending' then
      event(EVENT.PROXY_PENDING, event_id, now_raw, id, p[1], '', {'from', '""', 'gen', p[3] or '0'},
        p[4])
      intent_create(p[1], id, p[3])
    end
    out[#out + 1] = CREATE_REPLY.CREATED
    ids[#ids + 1] = id
  end
  i = i + 2 + 2 * nfields
end
if ikey then
  redis.call('HSET', ikey, 'fp', fingerprint, 'ids', table.concat(ids, ','))
  redis.call('EXPIRE', ikey, tonumber(ARGV[8]))
end
return out
