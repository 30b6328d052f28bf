-- Claim the proxies whose probe is due and push their next probe one interval ahead, so
-- that replicas sharing the work never probe a proxy twice in an interval.
-- ARGV: ns, now, interval, limit (0: only count the replica), replica ('' = no share bound),
--       failed_min, failed_max (the waits of a failed proxy; absent: the interval)
-- -> { live replicas, {field, value, ...}, ... }
local now, interval, limit = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local replica = ARGV[5]
local failed_min = tonumber(ARGV[6] or '') or interval
local failed_max = math.max(failed_min, tonumber(ARGV[7] or '') or failed_min)

-- Only an external proxy stays on the schedule when failed (transition.lua). It waits as
-- long as it has been failed (since `updated_at`), between failed_min and failed_max, so
-- its waits double; its next probe counts from its last one (half an interval early is
-- on time: the last probe started a little after its claim).
local function failed_wait(age)
  return math.min(failed_max, math.max(failed_min, age))
end

-- A fair share, not every due proxy: the caller takes ceil(due / live replicas), so one
-- replica that claims first does not take a whole cohort of proxies due together. A
-- replica is live while it has claimed within the last interval.
local live = 1
if replica ~= '' then
  redis.call('ZADD', k('probers'), now, replica)
  redis.call('ZREMRANGEBYSCORE', k('probers'), '-inf', '(' .. (now - interval))
  live = redis.call('ZCARD', k('probers'))
  local due = redis.call('ZCOUNT', k('probe'), '-inf', now)
  limit = math.min(limit, math.max(1, math.ceil(due / live)))
end

-- Each proxy's own grid, while replicas share the probes: a phase within the interval
-- from its id, so proxies created together are due at different moments (and come apart
-- again after a backlog). A lone replica has nothing to share: its proxies keep their
-- pace, due together if they came together.
local function on_grid(id, at)
  local phase = tonumber(string.sub(redis.sha1hex(id), 1, 8), 16) / 4294967296 * interval
  return phase + math.ceil((at - phase) / interval - 1e-6) * interval
end

local out = { live }
if limit <= 0 then return out end  -- only counted, nothing claimed
local ids = redis.call('ZRANGE', k('probe'), '-inf', now, 'BYSCORE', 'LIMIT', 0, limit)
for _, id in ipairs(ids) do
  local h = redis.call('HGETALL', k('proxy', id))
  if #h == 0 then
    redis.call('ZREM', k('probe'), id)
  else
    local phase = ''
    for i = 1, #h, 2 do
      if h[i] == 'phase' then phase = h[i + 1] break end
    end
    if phase == 'failed' then
      local f = redis.call('HMGET', k('proxy', id), 'updated_at', 'last_probe_at', 'external')
      local since, last = tonumber(f[1]) or now, tonumber(f[2]) or 0
      local due_then = last + failed_wait(last - since)
      if f[3] ~= '1' then  -- a managed one is being deleted: never probed again
        redis.call('ZREM', k('probe'), id)
      elseif due_then > now + interval / 2 then  -- not yet: back where its backoff says
        redis.call('ZADD', k('probe'), 'XX', due_then, id)
      else
        redis.call('ZADD', k('probe'), 'XX', now + failed_wait(now - since), id)
        out[#out + 1] = h
      end
    else
      -- Next probe one interval after this one was due (no drift by a claim's lateness),
      -- but one interval after this claim when it is more than half an interval late, so
      -- two claims of a proxy are always at least half an interval apart (and a backlog
      -- never makes one due twice in an interval); then, shared, on the proxy's grid, at
      -- most one interval later, once. A booting proxy keeps its pace: the grid would
      -- delay the probe that finds it up.
      local due_at = tonumber(redis.call('ZSCORE', k('probe'), id))
      local next_ = due_at + interval
      if now - due_at > interval / 2 then next_ = now + interval end
      if live > 1 and phase ~= 'booting' then next_ = on_grid(id, next_) end
      redis.call('ZADD', k('probe'), 'XX', next_, id)
      out[#out + 1] = h
    end
  end
end
return out
