-- Grant a lease on one ready, unleased, cooled-down, not-banned proxy; LRU first.
-- ARGV: ns, now, lease_id, holder, target, ttl, proxy_id ('' = any), provider, zone,
--       labels_json ('' = none), scan_limit, unavailable_retry, event_id, client (the
--       granting token's name: the lease's owner), max_probe_age (0 = no check),
--       idem_key ('' = none; scoped by the caller), fingerprint (of the request),
--       pool ('' = any; a refusal for a pool counts in `pool_refused:<pool>`, which the
--       pool controller's autoscale reads), exclusivity (the mode names and each
--       provider's mode: `ip,subnet,none;<default>;<provider>=<mode>,...`, built once by
--       proxyfleet.common.store.egress_holds), distinct ('' | the ip or subnet mode's name:
--       the exit address or network must be one the client holds no lease on),
--       high_water (the outbox's high-water mark: backlogged() in _lib.lua; 0 = none)
-- -> {OK, proxy_id, epoch, expires_at, {provider, zone, host, port, username, password, scheme},
--     lease_id, granted_at, egress_ip}
--  | {REPLAYED, ...the same} the lease the first grant with this key made, still active
--  | {KEY_REUSED} the key was used with another request | {LEASE_ENDED, state} its lease
--    has ended | {NONE_AVAILABLE, retry_after, stale, not_distinct, address_taken} (counts
--    of the candidates skipped for their probe, for `distinct`, for their held or cooling
--    address) | {MISSING} no such proxy | {NOT_GRANTABLE, reason, retry_after[, code]}
--    the proxy asked for is not grantable | {BACKLOG, outbox length}   (LEASE_REPLY)
local now, lease_id, holder, target = tonumber(ARGV[2]), ARGV[3], ARGV[4], ARGV[5]
local ttl, want, provider, zone = tonumber(ARGV[6]), ARGV[7], ARGV[8], ARGV[9]
local labels_json, scan_limit, retry = ARGV[10], tonumber(ARGV[11]), tonumber(ARGV[12])
local event_id, client, max_age = ARGV[13], ARGV[14], tonumber(ARGV[15]) or 0
local idem, fingerprint, pool = ARGV[16] or '', ARGV[17] or '', ARGV[18] or ''
local distinct = ARGV[20] or ''
local names, default_mode, listed = string.match(ARGV[19] or '', '^([^;]*);([^;]*);(.*)$')
if not names then return redis.error_reply('grant: malformed exclusivity argument') end
local SUBNET, NONE = string.match(names, '^[^,]+,([^,]+),([^,]+)$')
listed = ',' .. listed
-- A provider's mode, looked up once per call when first needed (a plain find: the cost
-- does not grow with the number of providers the argument lists).
local provider_modes = {}
local function provider_mode(name)
  local m = provider_modes[name]
  if not m then
    local at = string.find(listed, ',' .. name .. '=', 1, true)
    m = at and string.match(listed, '^[^,]+', at + #name + 2) or default_mode
    provider_modes[name] = m
  end
  return m
end
local ikey = (idem ~= '') and k('grant_idem', idem) or nil
-- A retried grant (its first answer lost) gets the lease the first one made, as long as
-- that lease lives: the key expires with the lease's first TTL.
if ikey then
  local seen = redis.call('HMGET', ikey, 'fp', 'lease')
  if seen[1] then
    if seen[1] ~= fingerprint then return {LEASE_REPLY.KEY_REUSED} end
    local l = redis.call('HMGET', k('lease', seen[2]), 'state', 'proxy_id', 'epoch',
      'expires_at', 'granted_at', 'egress_ip')
    if l[1] ~= 'active' then return {LEASE_REPLY.LEASE_ENDED, l[1] or 'expired'} end
    local got = redis.call('HMGET', k('proxy', l[2]), 'provider', 'zone', 'host', 'port',
      'username', 'password', 'scheme')
    return {LEASE_REPLY.REPLAYED, l[2], tonumber(l[3]), l[4], got, seen[2], l[5], l[6] or ''}
  end
end

local backlog = backlogged(tonumber(ARGV[21]))
if backlog then return {LEASE_REPLY.BACKLOG, backlog} end

local labels = nil
if labels_json ~= '' then labels = cjson.decode(labels_json) end
local ban_key = (target ~= '') and k('ban', target) or nil

local function banned(id)
  if not ban_key then return false end
  local until_ = redis.call('ZSCORE', ban_key, id)
  return until_ and tonumber(until_) > now
end

-- Only a proxy health saw answer recently: a stopped health service (or one far behind)
-- must not leave dead proxies grantable. One HGET per candidate examined.
local function fresh(id)
  if max_age <= 0 then return true end
  local t = tonumber(redis.call('HGET', k('proxy', id), 'last_ok_at'))
  return t ~= nil and t >= now - max_age
end

local function labels_match(id)
  if not labels then return true end
  local raw = redis.call('HGET', k('proxy', id), 'labels')
  local have = (raw and raw ~= '') and cjson.decode(raw) or {}
  for key, value in pairs(labels) do
    if have[key] ~= value then return false end
  end
  return true
end

-- A candidate as the grant hands it out: what the caller gets, its epoch, and what its
-- exit-address checks read (one HMGET).
local function read(id)
  return redis.call('HMGET', k('proxy', id), 'provider', 'zone', 'host', 'port', 'username',
    'password', 'epoch', 'pool', 'egress_ip', 'egress_net', 'scheme')
end

-- A proxy's exclusivity: its pool's `egress_exclusive` when set (one HGET per pool per
-- call), else its provider's from the argument, else the default.
local pool_modes = {}
local function mode_of(got)
  local in_pool = got[8]
  if in_pool and in_pool ~= '' then
    local m = pool_modes[in_pool]
    if not m then
      m = redis.call('HGET', k('pool', in_pool), 'egress_exclusive') or ''
      pool_modes[in_pool] = m
    end
    if m ~= '' then return m end
  end
  return provider_mode(got[1] or '')
end

-- `distinct`: the client already holds a lease on this exit address (or network). An
-- unknown address cannot be shown distinct, so it never qualifies.
local client_key = (client ~= '') and k('client_egress', client) or nil
local function not_distinct(ip, net)
  if distinct == '' then return false end
  if ip == '' then return true end
  if not client_key then return false end
  local field = (distinct == SUBNET) and ('net:' .. net) or ('ip:' .. ip)
  return redis.call('HEXISTS', client_key, field) == 1
end

local function take(id, got, mode)
  local pkey = k('proxy', id)
  -- A hybrid-logical-clock epoch: above the stored one and at least the clock in ms, so
  -- after a store reset (stored epoch lost) fencing tokens still only grow.
  local epoch = math.max((tonumber(got[7]) or 0) + 1, math.floor(now * 1000))
  local in_pool, ip, net = got[8], got[9] or '', got[10] or ''
  local handed = {got[1], got[2], got[3], got[4], got[5], got[6], got[11]}
  redis.call('HSET', pkey, 'epoch', epoch, 'lease_id', lease_id)
  local expires = now + ttl
  for _, key in ipairs(avail_keys(got[1], got[2], in_pool)) do redis.call('ZREM', key, id) end
  local provider_ = got[1] or ''
  local lkey = k('lease', lease_id)
  redis.call('HSET', lkey, 'id', lease_id, 'proxy_id', id, 'epoch', epoch,
    'holder', holder, 'target', target, 'granted_at', now, 'expires_at', expires,
    'state', 'active', 'provider', provider_, 'client', client)
  local data = {'epoch', tostring(epoch), 'holder', json_str(holder), 'target',
    json_str(target), 'expires_at', tostring(expires)}
  if ip ~= '' then
    local holds_net = mode == SUBNET
    redis.call('HSET', lkey, 'egress_ip', ip, 'egress_net', net, 'egress_mode', mode)
    if holds_net then redis.call('HSET', lkey, 'egress_net_held', '1') end
    egress_hold(lease_id, client, ip, net, holds_net)
    data[#data + 1] = 'egress_ip'
    data[#data + 1] = json_str(ip)
  end
  redis.call('ZADD', k('leases'), expires, lease_id)
  if ikey then
    redis.call('HSET', ikey, 'fp', fingerprint, 'lease', lease_id)
    redis.call('EXPIRE', ikey, math.max(math.ceil(ttl), 1))
  end
  event(EVENT.LEASE_GRANTED, event_id, ARGV[2], id, provider_, lease_id,
    acted(client, client, data))
  return {LEASE_REPLY.OK, id, epoch, tostring(expires), handed, lease_id, ARGV[2], ip}
end

if want ~= '' then
  local NOT_GRANTABLE = LEASE_REPLY.NOT_GRANTABLE
  local p = redis.call('HMGET', k('proxy', want), 'phase', 'lease_id', 'avail_at', 'withheld',
    'pool')
  if not p[1] then return {LEASE_REPLY.MISSING} end
  if p[1] ~= 'ready' then
    return {NOT_GRANTABLE, 'proxy is ' .. p[1] .. ', not ready', tostring(retry)}
  end
  if p[4] and p[4] ~= '' then
    return {NOT_GRANTABLE, 'proxy is ' .. p[4] .. ': not granted', tostring(retry),
      'proxy_' .. p[4]}
  end
  if pool ~= '' and p[5] ~= pool then
    return {NOT_GRANTABLE, 'proxy is not a member of pool ' .. pool, tostring(retry)}
  end
  if p[2] and p[2] ~= '' then
    local exp = tonumber(redis.call('HGET', k('lease', p[2]), 'expires_at')) or (now + retry)
    return {NOT_GRANTABLE, 'proxy is leased', tostring(math.max(exp - now, 0.001))}
  end
  local avail_at = tonumber(p[3]) or 0
  if avail_at > now then
    return {NOT_GRANTABLE, 'proxy is cooling down', tostring(avail_at - now)}
  end
  if not fresh(want) then
    local why = string.format('proxy has no good probe in the last %g s', max_age)
    return {NOT_GRANTABLE, why, tostring(retry), 'probe_stale'}
  end
  if banned(want) then
    local until_ = tonumber(redis.call('ZSCORE', ban_key, want))
    return {NOT_GRANTABLE, 'proxy is banned for ' .. target, tostring(until_ - now)}
  end
  if not labels_match(want) then
    return {NOT_GRANTABLE, 'proxy does not match the selector', tostring(retry)}
  end
  local got = read(want)
  local ip, net = got[9] or '', got[10] or ''
  if not_distinct(ip, net) then
    local unit = (distinct == SUBNET) and 'a network' or 'an address'
    return {NOT_GRANTABLE,
      'proxy exits through ' .. unit .. ' this client already holds a lease on',
      tostring(retry), 'egress_not_distinct'}
  end
  local mode = mode_of(got)
  local taken, frees = egress_taken(mode, ip, net, now, SUBNET, NONE)
  if taken == 'egress_held' then
    local until_ = egress_holds_end(frees) or (now + retry)
    return {NOT_GRANTABLE, 'proxy exits through ' .. ip .. ', held by another lease',
      tostring(math.max(until_ - now, 0.001)), taken}
  elseif taken then
    return {NOT_GRANTABLE, 'proxy exits through ' .. ip .. ', which is cooling down',
      tostring(frees - now), taken}
  end
  return take(want, got, mode)
end

local key = k('avail')
if pool ~= '' then key = k('avail_pool', pool)
elseif provider ~= '' and zone ~= '' then key = k('avail', provider, zone)
elseif provider ~= '' then key = k('avail', provider) end
-- Whether the set scanned already holds only the selector's provider and zone.
local narrowed = pool == '' and (zone == '' or provider ~= '')
local function where_ok(id)
  if narrowed then return true end
  local at = redis.call('HMGET', k('proxy', id), 'provider', 'zone')
  return (provider == '' or at[1] == provider) and (zone == '' or at[2] == zone)
end

local batch, offset, stale, unlike, taken_n = 32, 0, 0, 0, 0
local FEW = 8
local frees = {}  -- what frees the first few candidates whose address is taken
-- A candidate skipped for its address goes to the back of the queue (after the scan: the
-- pages must not move under it): behind every free proxy while the address is held, as if
-- used with it (LRU by address), or until its address's cooldown ends. Left at the head,
-- it would be examined again by every grant until then.
local behind = {}
local function send_back()
  for _, b in ipairs(behind) do
    for _, key in ipairs(avail_keys(b[2], b[3], b[4])) do
      redis.call('ZADD', key, 'XX', b[5], b[1])
    end
  end
end
while offset < scan_limit do
  local ids = redis.call('ZRANGE', key, '-inf', now, 'BYSCORE', 'LIMIT', offset, batch)
  for _, id in ipairs(ids) do
    if where_ok(id) and not banned(id) and labels_match(id) then
      if fresh(id) then
        local got = read(id)
        local ip, net = got[9] or '', got[10] or ''
        if not_distinct(ip, net) then
          unlike = unlike + 1
        else
          local mode = mode_of(got)
          local taken, free = egress_taken(mode, ip, net, now, SUBNET, NONE)
          if not taken then
            send_back()
            return take(id, got, mode)
          end
          taken_n = taken_n + 1
          if #frees < FEW then frees[#frees + 1] = free end
          local at = (type(free) == 'number') and free or now
          behind[#behind + 1] = {id, got[1], got[2], got[8], at}
        end
      else
        stale = stale + 1
      end
    end
  end
  if #ids < batch then break end
  offset = offset + batch
end

send_back()

-- Nothing now: suggest waiting until the soonest of the next proxy leaving its cooldown
-- and the next lease ending on a proxy the selector takes (a lower bound: bans and labels
-- are not looked at), or of an exit address a candidate waits for. Each list is examined
-- up to its first few: past them, a match ends no sooner than the last one examined.
-- Counted only for a declared pool (a misspelt one would leave a counter behind).
if pool ~= '' and redis.call('EXISTS', k('pool', pool)) == 1 then
  redis.call('INCR', k('pool_refused', pool))
end
local function first_end(flat, matches)
  for i = 1, #flat, 2 do
    if matches(flat[i]) or i + 1 == 2 * FEW then return tonumber(flat[i + 1]) end
  end
  return nil
end
local soonest = first_end(redis.call('ZRANGE', key, '(' .. now, '+inf', 'BYSCORE', 'LIMIT', 0,
  FEW, 'WITHSCORES'), where_ok)
local lease_end = first_end(redis.call('ZRANGE', k('leases'), '-inf', '+inf', 'BYSCORE',
  'LIMIT', 0, FEW, 'WITHSCORES'), function(lid)
    local pid = redis.call('HGET', k('lease', lid), 'proxy_id')
    if not pid then return false end
    local where = redis.call('HMGET', k('proxy', pid), 'provider', 'zone')
    return (provider == '' or where[1] == provider) and (zone == '' or where[2] == zone)
  end)
if lease_end and (not soonest or lease_end < soonest) then soonest = lease_end end
for _, free in ipairs(frees) do
  local at = (type(free) == 'number') and free or egress_holds_end(free)
  if at and (not soonest or at < soonest) then soonest = at end
end
if soonest then retry = math.max(soonest - now, 0.001) end
return {LEASE_REPLY.NONE_AVAILABLE, tostring(retry), stale, unlike, taken_n}
