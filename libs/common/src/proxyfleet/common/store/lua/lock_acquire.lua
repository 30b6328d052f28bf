-- Take each named lock that is free (SET NX PX), or extend it when this token holds it
-- already; a lock another token holds is left alone.
-- ARGV: ns, token, ttl_ms, name, name, ...   -> {holder of each name, in order}
local token, ttl = ARGV[2], ARGV[3]
local holders = {}
for i = 4, #ARGV do
  local key = k('lock', ARGV[i])
  if redis.call('SET', key, token, 'NX', 'PX', ttl) then
    holders[#holders + 1] = token
  else
    local holder = redis.call('GET', key) or ''
    if holder == token then redis.call('PEXPIRE', key, ttl) end
    holders[#holders + 1] = holder
  end
end
return holders
