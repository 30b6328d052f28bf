-- Extend each named lock this token still holds; never takes one that expired or that
-- another token took meanwhile (a round that lost its lock must not act on its listing).
-- ARGV: ns, token, ttl_ms, name, name, ...   -> {names still held}
local token, ttl = ARGV[2], ARGV[3]
local held = {}
for i = 4, #ARGV do
  local key = k('lock', ARGV[i])
  if redis.call('GET', key) == token then
    redis.call('PEXPIRE', key, ttl)
    held[#held + 1] = ARGV[i]
  end
end
return held
