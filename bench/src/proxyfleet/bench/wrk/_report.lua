-- Prepended to every benchmark script by proxyfleet.bench.wrkrun. done() prints lines the
-- parser (proxyfleet.bench.wrkparse) reads:
--   PF_LATENCY <series> <percentile> <microseconds>   one per percentile
--   PF_COUNT <name> <value>                          counters summed over the threads
-- Series "all" is wrk's own histogram of every request; scripts that time requests
-- themselves (cycle.lua) add their own series.
pf_percentiles = { 1, 5, 10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 85, 90, 95, 97.5, 98,
  99, 99.5, 99.9, 99.99, 100 }

local pf_threads = {}
local pf_thread_count = 0

function setup(thread)
  pf_thread_count = pf_thread_count + 1
  thread:set("pf_thread_id", pf_thread_count)
  table.insert(pf_threads, thread)
end

local function pf_sorted_percentile(sorted, p)
  if #sorted == 0 then return 0 end
  local i = math.max(1, math.min(#sorted, math.ceil(#sorted * p / 100)))
  return sorted[i]
end

-- Counters and latency samples the threads kept in flat globals: pf_counts (name ->
-- number) and, for each name in pf_series, the array pf_samples_<name> (microseconds).
-- Flat on purpose: wrk's thread:get crashes on nested tables.
pf_series = pf_series or {}

local function pf_gather()
  local counts, samples = {}, {}
  for _, thread in ipairs(pf_threads) do
    local c = thread:get("pf_counts") or {}
    for name, value in pairs(c) do counts[name] = (counts[name] or 0) + value end
    for _, series in ipairs(pf_series) do
      samples[series] = samples[series] or {}
      for _, v in ipairs(thread:get("pf_samples_" .. series) or {}) do
        table.insert(samples[series], v)
      end
    end
  end
  return counts, samples
end

function done(summary, latency, requests)
  for _, p in ipairs(pf_percentiles) do
    -- percentile(100) reads past wrk's histogram (0): the maximum is latency.max
    local us = (p >= 100) and latency.max or latency:percentile(p)
    io.write(string.format("PF_LATENCY all %g %d\n", p, us))
  end
  local counts, samples = pf_gather()
  for series, values in pairs(samples) do
    table.sort(values)
    for _, p in ipairs(#values > 0 and pf_percentiles or {}) do
      io.write(string.format("PF_LATENCY %s %g %d\n", series, p,
        math.floor(pf_sorted_percentile(values, p) + 0.5)))
    end
    io.write(string.format("PF_COUNT %s_samples %d\n", series, #values))
  end
  for name, value in pairs(counts) do
    io.write(string.format("PF_COUNT %s %d\n", name, value))
  end
  io.write(string.format("PF_COUNT requests %d\n", summary.requests))
  io.write(string.format("PF_COUNT duration_us %d\n", summary.duration))
  io.write(string.format("PF_COUNT status_errors %d\n", summary.errors.status))
end
