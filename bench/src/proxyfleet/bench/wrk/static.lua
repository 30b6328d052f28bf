-- One fixed request, sent as fast as the connections allow: the baselines (GET /bench/json,
-- POST /bench/evalsha) and grant-only (POST /v1/leases, never released).
-- Env: PF_TOKEN (bearer token), PF_METHOD (default GET), PF_BODY (default none).
wrk.method = os.getenv("PF_METHOD") or "GET"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("PF_TOKEN") or "")
local body = os.getenv("PF_BODY")
if body and body ~= "" then
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
end
