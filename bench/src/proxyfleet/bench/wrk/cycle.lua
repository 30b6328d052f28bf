-- Grant -> release cycles: response() takes lease_id and epoch from a grant, and the next
-- request() of the thread releases that lease; a cycle is two requests. Each request is
-- timed here too (monotonic clock, matched by the holder tag or the lease id the response
-- echoes), so grants and releases get latency series of their own.
-- Env: PF_TOKEN (bearer token).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } pf_timespec;
  int clock_gettime(int clk_id, pf_timespec *tp);
]]
local ts = ffi.new("pf_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

local headers = {
  ["Authorization"] = "Bearer " .. (os.getenv("PF_TOKEN") or ""),
  ["Content-Type"] = "application/json",
}
local pending = {} -- leases granted and not yet released: { lease_id, epoch }
local started = {} -- holder tag or lease id -> start time
local seq = 0
pf_counts = { cycles = 0, grants = 0, failed = 0 }
pf_series = { "grant", "release" }
pf_samples_grant, pf_samples_release = {}, {}
local samples = { grant = pf_samples_grant, release = pf_samples_release }

function request()
  local lease = table.remove(pending)
  if lease then
    started[lease[1]] = now_us()
    return wrk.format("POST", "/v1/leases/" .. lease[1] .. "/release", headers,
      '{"epoch":' .. lease[2] .. '}')
  end
  seq = seq + 1
  local tag = "w" .. (pf_thread_id or 0) .. "-" .. seq
  started[tag] = now_us()
  return wrk.format("POST", "/v1/leases", headers, '{"holder":"' .. tag .. '"}')
end

local function took(key, series)
  local t0 = started[key]
  if t0 then
    started[key] = nil
    table.insert(samples[series], now_us() - t0)
  end
end

function response(status, _, body)
  if status == 201 then
    local lease_id = body:match('"lease_id":"([^"]+)"')
    local epoch = body:match('"epoch":(%d+)')
    local holder = body:match('"holder":"([^"]*)"')
    if lease_id and epoch then
      pf_counts.grants = pf_counts.grants + 1
      table.insert(pending, { lease_id, epoch })
      if holder then took(holder, "grant") end
      return
    end
  elseif status == 200 then
    local lease_id = body:match('"lease_id":"([^"]+)"')
    if lease_id then
      pf_counts.cycles = pf_counts.cycles + 1
      took(lease_id, "release")
      return
    end
  end
  pf_counts.failed = pf_counts.failed + 1
end
