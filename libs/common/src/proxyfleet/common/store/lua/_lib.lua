-- Shared helpers, prepended to every script. KEYS are not used: every script runs on a
-- single Redis (see docs/decisions/store.md, R1) and builds keys from ARGV[1], the
-- namespace.
local ns = ARGV[1]
local function k(...) return ns .. ':' .. table.concat({...}, ':') end

-- The grantable sets a proxy is in: all, its provider's, its provider and zone's, and its
-- pool's when it has one (grants select by pool).
local function avail_keys(provider, zone, pool)
  local keys = { k('avail'), k('avail', provider), k('avail', provider, zone) }
  if pool and pool ~= '' then keys[#keys + 1] = k('avail_pool', pool) end
  return keys
end

-- A withheld proxy (draining or quarantined: proxyfleet.common.wire.models.Withheld) is never
-- grantable, whatever else makes it so: this is the one place that says so.
-- `p`: its provider, zone, pool and withheld when the caller read them already.
local function avail_add(id, score, p)
  p = p or redis.call('HMGET', k('proxy', id), 'provider', 'zone', 'pool', 'withheld')
  if p[4] and p[4] ~= '' then return end
  for _, key in ipairs(avail_keys(p[1], p[2], p[3])) do redis.call('ZADD', key, score, id) end
end

local function avail_rem(id)
  local p = redis.call('HMGET', k('proxy', id), 'provider', 'zone', 'pool')
  for _, key in ipairs(avail_keys(p[1], p[2], p[3])) do redis.call('ZREM', key, id) end
end

-- A pool's members (`pool_members:<pool>`, scored by creation time): every proxy of the
-- pool that is not deleted, kept by the scripts that create, adopt and delete proxies.
local function member_add(pool, id, created_at)
  if pool and pool ~= '' then redis.call('ZADD', k('pool_members', pool), created_at, id) end
end
local function member_rem(pool, id)
  if pool and pool ~= '' then redis.call('ZREM', k('pool_members', pool), id) end
end

-- A fenced write (the pool controller's) goes ahead only while `token` holds the lock
-- `lock`: a replica that lost it while paused writes nothing. '' lock: not fenced.
local function fenced_out(lock, token)
  return lock ~= nil and lock ~= '' and redis.call('GET', k('lock', lock)) ~= token
end

-- A provider's index, `provider:<name>`: the ids of its proxies that are not deleted
-- (score 0: in id order, like `proxies`), so a provider's listing reads no other proxy.
-- Kept by the scripts that create, adopt and transition proxies.
local function index_add(provider, id) redis.call('ZADD', k('provider', provider or ''), 0, id) end
local function index_rem(provider, id) redis.call('ZREM', k('provider', provider or ''), id) end
-- The marker `provider_index` says every proxy is in its index (readers trust them then):
-- set by index_providers.lua once it has indexed a store written before them, or by the
-- first proxy written to an empty store (nothing there to index).
local function index_marker_if_empty(now_raw)
  if redis.call('ZCARD', k('proxies')) == 0 then redis.call('SET', k('provider_index'), now_raw) end
end

-- The exit address index (written by egress.lua only): `egress:<ip>`, the ids of the
-- proxies on a confirmed address; per group (`provider:<p>`, `zone:<p>:<z>`, `pool:<pool>`)
-- `egress_counts:<group>`, ip -> proxies, and in `egress_summary` `<group>|proxies` and
-- `<group>|shared` (addresses with more than one), so health's metric reads no address.
-- How many share an address is the size of its set, read when proxies are read: never
-- written on each member (that would make one proxy's move cost one write per proxy
-- already on the address: quadratic for a fleet behind one NAT).
local function egress_groups(provider, zone, pool)
  local groups = { 'provider:' .. (provider or ''), 'zone:' .. (provider or '') .. ':' .. (zone or '') }
  if pool and pool ~= '' then groups[#groups + 1] = 'pool:' .. pool end
  return groups
end
local function egress_count(groups, ip, delta)
  local summary = k('egress_summary')
  for _, g in ipairs(groups) do
    local n = redis.call('HINCRBY', k('egress_counts', g), ip, delta)
    if n <= 0 then redis.call('HDEL', k('egress_counts', g), ip) end
    if (delta > 0 and n == 2) or (delta < 0 and n == 1) then
      redis.call('HINCRBY', summary, g .. '|shared', delta)
    end
    if redis.call('HINCRBY', summary, g .. '|proxies', delta) <= 0 then
      redis.call('HDEL', summary, g .. '|proxies', g .. '|shared')
    end
  end
end
-- Takes a proxy out of the index and the counts (deleted, or its address changes); returns
-- the address it was on ('' none).
local function egress_forget(id)
  local p = redis.call('HMGET', k('proxy', id), 'egress_ip', 'provider', 'zone', 'pool')
  local ip = p[1] or ''
  if ip == '' or redis.call('SREM', k('egress', ip), id) == 0 then return '' end
  egress_count(egress_groups(p[2], p[3], p[4]), ip, -1)
  return ip
end

-- End a lease: tombstone it for `keep` seconds (default a day), so a late report/release
-- gets a clear 409, and free the proxy and the exit address it held (egress_hold, below).
-- `l`: the lease's LEASE_ENDS fields when the caller read them already; `extra`: more
-- field/value pairs to write on it. Returns its proxy id (nil: none) and provider.
local LEASE_ENDS = {'proxy_id', 'state', 'egress_ip', 'egress_net', 'egress_net_held', 'client',
  'provider'}
local function end_lease(lease_id, state, now, cooldown, keep, l, extra)
  local lkey = k('lease', lease_id)
  l = l or redis.call('HMGET', lkey, unpack(LEASE_ENDS))
  local proxy_id = l[1]
  local fields = {'state', state, 'ended_at', now}
  for _, v in ipairs(extra or {}) do fields[#fields + 1] = v end
  redis.call('HSET', lkey, unpack(fields))
  redis.call('EXPIRE', lkey, math.max(math.ceil(tonumber(keep) or 86400), 1))
  redis.call('ZREM', k('leases'), lease_id)
  -- Only an active lease holds an address (a second end must not count the client twice).
  local ip, net = l[3] or '', l[4] or ''
  if l[2] == 'active' and ip ~= '' then
    redis.call('HDEL', k('egress_held', 'ip', ip), lease_id)
    redis.call('HDEL', k('egress_held', 'net', net), lease_id)
    redis.call('HDEL', k('egress_held', 'subnet', net), lease_id)
    -- The cooldown follows the address: another proxy on it rests too. The value, compared
    -- with a grant's now, decides; the expiry only collects the key, long after.
    if cooldown > 0 then
      local until_, gc = now + cooldown, math.ceil(cooldown) + 300
      redis.call('SET', k('egress_cool', 'ip', ip), until_, 'EX', gc)
      if l[5] == '1' then redis.call('SET', k('egress_cool', 'net', net), until_, 'EX', gc) end
    end
    if l[6] and l[6] ~= '' then
      local ckey = k('client_egress', l[6])
      for _, f in ipairs({'ip:' .. ip, 'net:' .. net}) do
        if redis.call('HINCRBY', ckey, f, -1) <= 0 then redis.call('HDEL', ckey, f) end
      end
    end
  end
  -- The lease's provider: stored on it at grant; older leases ask their proxy.
  local provider = l[7] or ''
  if not proxy_id then return nil, provider end
  local pkey = k('proxy', proxy_id)
  local p = redis.call('HMGET', pkey, 'lease_id', 'phase', 'provider', 'zone', 'pool', 'withheld')
  if p[1] == lease_id then
    local avail_at = now + cooldown
    redis.call('HSET', pkey, 'lease_id', '', 'avail_at', avail_at)
    if p[2] == 'ready' then avail_add(proxy_id, avail_at, {p[3], p[4], p[5], p[6]}) end
  end
  if provider == '' then provider = p[3] or '' end
  return proxy_id, provider
end

-- A granted lease holds its proxy's exit address: `egress_held:ip:<ip>` and
-- `egress_held:net:<net>` (every lease with a known address, whatever its mode),
-- `egress_held:subnet:<net>` (a lease that holds the whole network), each a set of lease
-- ids kept as a HASH (field: the lease id, value 1: a small hash is a listpack, 120 bytes
-- for one lease where a SET is a hashtable of 232); and counts it in its client's
-- `client_egress:<client>` (fields ip:<ip>, net:<net>) for `distinct` grants.
-- end_lease, above, undoes all of it.
local function egress_hold(lease_id, client, ip, net, holds_net)
  redis.call('HSET', k('egress_held', 'ip', ip), lease_id, 1)
  redis.call('HSET', k('egress_held', 'net', net), lease_id, 1)
  if holds_net then redis.call('HSET', k('egress_held', 'subnet', net), lease_id, 1) end
  if client ~= '' then
    local ckey = k('client_egress', client)
    redis.call('HINCRBY', ckey, 'ip:' .. ip, 1)
    redis.call('HINCRBY', ckey, 'net:' .. net, 1)
  end
end

-- Whether an exit address is taken for a lease in `mode` (grant.lua passes the names of
-- the subnet and none modes): nil when free, else a refusal code and what frees it (the
-- key of the set of leases holding it, or a cooldown's end). An unknown address holds
-- nothing and is never taken; `none` checks nothing.
local function egress_cooling(key, now)
  local until_ = tonumber(redis.call('GET', key))
  if until_ and until_ > now then return until_ end
  return nil
end

local function egress_taken(mode, ip, net, now, subnet, none)
  if ip == '' or mode == none then return nil end
  local held, cool
  if mode == subnet then
    held = k('egress_held', 'net', net)
    if redis.call('EXISTS', held) == 1 then return 'egress_held', held end
    cool = egress_cooling(k('egress_cool', 'net', net), now)
      or egress_cooling(k('egress_cool', 'ip', ip), now)
  else
    -- Held by a lease on this address, or by one holding its whole network: one EXISTS
    -- for both (an empty set does not exist), which of them read only when one is.
    held = k('egress_held', 'ip', ip)
    local by_net = k('egress_held', 'subnet', net)
    if redis.call('EXISTS', held, by_net) > 0 then
      if redis.call('EXISTS', held) == 0 then held = by_net end
      return 'egress_held', held
    end
    cool = egress_cooling(k('egress_cool', 'ip', ip), now)
  end
  if cool then return 'egress_cooling', cool end
  return nil
end

-- When the holds of a set end: the latest expiry among a few of its leases.
local function egress_holds_end(set_key)
  local last = nil
  for _, lid in ipairs(redis.call('HRANDFIELD', set_key, 8)) do
    local e = tonumber(redis.call('HGET', k('lease', lid), 'expires_at'))
    if e and (not last or e > last) then last = e end
  end
  return last
end

-- A lease is its owner's: a caller restricted to `owner` (a client token's name; '' for an
-- admin, who may act on any lease) gets "not found" for another's, so nothing tells it
-- the lease exists. Leases from before owners were recorded have none: admins only.
local function not_owner(lease_client, owner)
  return owner ~= '' and lease_client ~= owner
end

-- ---- the outbox: events and intents appended in the script that makes the change ----
-- An intent is {s = subject, i = Nats-Msg-Id, d = JSON body}, an event a record (below); a
-- relay publishes each to JetStream and deletes it once acked
-- (proxyfleet.common.messaging.relay). Appending here, in the same script as the write, is
-- what makes "written" and "announced" one atomic step.
local events_made = 0

local function outbox_add(subject, msg_id, body)
  redis.call('XADD', k('outbox'), '*', 's', subject, 'i', msg_id, 'd', body)
end

-- New work (grants, creates) stops while the outbox holds `high_water` entries or more
-- (0: no mark), so Redis fills no further while NATS is away; what ends work still goes.
-- -> the outbox's length when over the mark, else nil.
local function backlogged(high_water)
  if not high_water or high_water <= 0 then return nil end
  local length = redis.call('XLEN', k('outbox'))
  if length >= high_water then return length end
  return nil
end

local function json_str(s) return cjson.encode(tostring(s or '')) end

-- data: a flat list {key, json_value, key, json_value, ...} (values already encoded).
-- now_raw is the caller's clock reading as sent (a JSON number, full precision).
-- event_id: the first event of a script takes the caller's id; others append -2, -3, ...
-- A lease event's data with `client` (the lease's owner, so a client's events are its own
-- without a look-up) and `by` (the token that made the call, an admin's too; '' when
-- nobody called: an expiry, a revocation).
local function acted(owner, actor, data)
  if owner and owner ~= '' then
    data[#data + 1] = 'client'
    data[#data + 1] = json_str(owner)
  end
  if actor and actor ~= '' then
    data[#data + 1] = 'by'
    -- '' (no JSON value): the owner's own call, the usual case; the relay writes `client`.
    data[#data + 1] = (actor == owner) and '' or json_str(actor)
  end
  return data
end

-- pool: the pool the event concerns ('' or nil: none). The event goes into the outbox as a
-- record (store/outbox_codec.py): its type's code and envelope, then each data key's code
-- (DATA_KEY, or the key itself) and JSON value, joined by RECORD_SEP; the relay publishes
-- it as the documented event. The tables and the separator come from the prelude.
local function event(event_type, event_id, now_raw, proxy_id, provider, lease_id, data, pool)
  events_made = events_made + 1
  local id = event_id
  if events_made > 1 then id = event_id .. '-' .. events_made end
  local rec = {EVENT_CODE[event_type], id, now_raw, proxy_id or '', provider or '',
    lease_id or '', pool or ''}
  for i = 1, #data, 2 do
    rec[#rec + 1] = DATA_KEY[data[i]] or data[i]
    rec[#rec + 1] = data[i + 1]
  end
  redis.call('XADD', k('outbox'), '*', RECORD_FIELD, table.concat(rec, RECORD_SEP))
end

-- gen > 0: a revived external proxy's create, which JetStream must not take for a
-- duplicate of its first one within its window.
local function intent_create(provider, proxy_id, gen)
  local suffix = (gen and tonumber(gen) > 0) and (':' .. gen) or ''
  outbox_add(intent_create_subject(provider), proxy_id .. ':create' .. suffix,
    create_intent_json({proxy_id = json_str(proxy_id)}))
end

local function intent_delete(provider, proxy_id, gen, reason)
  outbox_add(intent_delete_subject(provider), proxy_id .. ':delete:' .. gen,
    delete_intent_json({proxy_id = json_str(proxy_id), resource_id = '""',
      reason = json_str(reason)}))
end

-- The provider of a lease: stored on it at grant; older leases ask their proxy.
local function lease_provider(lease_id, proxy_id)
  local p = redis.call('HGET', k('lease', lease_id), 'provider')
  if (not p or p == '') and proxy_id and proxy_id ~= '' then
    p = redis.call('HGET', k('proxy', proxy_id), 'provider')
  end
  return p or ''
end

-- Why a lease that is no longer active refuses renew/report/release: a revoked one says
-- what revoked it (stored by the script that did). -> {REFUSED, message, code}
local function not_active(lkey, state)
  if state == 'revoked' then
    local why = redis.call('HGET', lkey, 'reason')
    if not why or why == '' then why = 'proxy gone' end
    return {LEASE_REPLY.REFUSED, 'lease revoked: ' .. why, 'lease_revoked'}
  end
  return {LEASE_REPLY.REFUSED, 'lease is ' .. state}
end
