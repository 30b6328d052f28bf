-- Delete each named lock this token holds (compare-and-delete): a lock that expired and
-- was taken by another token stays that token's.
-- ARGV: ns, token, name, name, ...   -> {names released}
local token = ARGV[2]
local released = {}
for i = 3, #ARGV do
  local key = k('lock', ARGV[i])
  if redis.call('GET', key) == token then
    redis.call('DEL', key)
    released[#released + 1] = ARGV[i]
  end
end
return released
