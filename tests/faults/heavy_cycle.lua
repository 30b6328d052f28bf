-- The fault suite's heavy load (tests/faults/heavy.py): grant -> release cycles as the
-- bench's cycle.lua, but one connection per thread (wrk -tN -cN), so every response
-- answers the request its thread sent last. Each thread writes what the audit needs to a
-- file of its own (merged by heavy.py), one tab-separated line per fact:
--   R op started seconds status code retry_after   every answered request (status 0: none)
--   G lease_id proxy_id epoch granted_at expires_at  every 201 grant
--   X lease_id release_sent status                  a lease's release, once it is settled
-- and done() writes held.tsv: S lease_id release_sent, a lease whose release was sent but
-- not answered when wrk stopped (its owner let go then, whatever the server did with it).
-- Times are wall-clock seconds (the stream's clock: one machine). A release refused for a
-- while (503) is sent again after Retry-After (capped) until PF_RELEASE_FOR seconds.
-- Env: PF_TOKEN, PF_RECORD_DIR (empty: record nothing, to measure what recording costs),
-- PF_TTL, PF_RELEASE_FOR.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } pf_timespec;
  int clock_gettime(int clk_id, pf_timespec *tp);
]]
local ts = ffi.new("pf_timespec")
local function now()
  ffi.C.clock_gettime(0, ts) -- CLOCK_REALTIME: comparable with the servers' event times
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

local headers = {
  ["Authorization"] = "Bearer " .. (os.getenv("PF_TOKEN") or ""),
  ["Content-Type"] = "application/json",
}
local record_dir = os.getenv("PF_RECORD_DIR") or ""
local grant_body = '{"ttl":' .. (os.getenv("PF_TTL") or "10") .. ',"holder":"heavy"}'
local release_for = tonumber(os.getenv("PF_RELEASE_FOR") or "20")

local threads = {}
function setup(thread) -- runs in wrk's main state, before each thread's init()
  table.insert(threads, thread)
  thread:set("pf_thread_id", #threads)
end

function done() -- wrk's main state, once every thread stopped
  if record_dir == "" then return end
  local f = assert(io.open(record_dir .. "/held.tsv", "w"))
  for _, thread in ipairs(threads) do
    local id, sent = thread:get("pf_held_id"), thread:get("pf_held_sent")
    if id and sent then f:write("S\t", id, "\t", string.format("%.6f", sent), "\n") end
  end
  f:close()
end

local out -- this thread's record file (nil: not recording)
local sent_op, sent_at -- the request in flight: grant or release, when request() built it
local lease -- the lease this thread holds: id, epoch, first release time
local pause = 0 -- milliseconds before the next request (after a refusal)
local built = 0 -- requests built by this thread

function init(_)
  if record_dir ~= "" then
    out = assert(io.open(record_dir .. "/thread-" .. pf_thread_id .. ".tsv", "w"))
  end
end

-- One string.format a line: what recording costs wrk is mostly these (heavy_cost.py).
local function write(format, ...)
  if out then out:write(string.format(format, ...)) end
end
local R = "R\t%s\t%.6f\t%.6f\t%d\t%s\t%d\n"

function delay()
  return pause
end

function request()
  local t = now()
  built = built + 1
  -- wrk builds thread 1's first request once just to check it (script_verify_request);
  -- otherwise a request still in flight means its connection broke and wrk reconnected.
  if sent_op and not (pf_thread_id == 1 and built == 2) then
    write(R, sent_op, sent_at, t - sent_at, 0, "", 0)
  end
  sent_at = t
  if lease then
    sent_op = "release"
    lease.first = lease.first or t
    lease.last = t
    pf_held_id, pf_held_sent = lease.id, t -- flat globals: done() reads them (thread:get)
    return wrk.format("POST", "/v1/leases/" .. lease.id .. "/release", headers,
      '{"epoch":' .. lease.epoch .. '}')
  end
  sent_op = "grant"
  return wrk.format("POST", "/v1/leases", headers, grant_body)
end

local function settle(status)
  write("X\t%s\t%.6f\t%d\n", lease.id, lease.last, status)
  lease, pf_held_id, pf_held_sent = nil, nil, nil
end

function response(status, hdrs, body)
  local t = now()
  local op, at = sent_op, sent_at
  sent_op = nil
  local code, retry_after = "", 0
  pause = 0
  if status >= 300 then
    code = body:match('"error":"([^"]*)"') or "not-json"
    local ra = hdrs["retry-after"] or hdrs["Retry-After"]
    retry_after = ra and 1 or 0
    pause = math.floor(math.min(tonumber(ra or "") or 0.1, 0.5) * 1000)
  end
  write(R, op, at, t - at, status, code, retry_after)
  if op == "grant" and status == 201 then
    local id = body:match('"lease_id":"([^"]+)"')
    local epoch = body:match('"epoch":(%d+)')
    if out then
      local proxy = body:match('"proxy":{"id":"([^"]+)"')
      local expires = body:match('"expires_at":([%d.]+)')
      write("G\t%s\t%s\t%s\t%.6f\t%s\n", id, proxy, epoch, t, expires)
    end
    lease = { id = id, epoch = epoch }
  elseif op == "release" then
    if status == 200 or status == 404 or status == 409 or t - lease.first > release_for then
      settle(status)
    end
  end
end
