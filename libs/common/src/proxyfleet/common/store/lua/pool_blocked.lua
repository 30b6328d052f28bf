-- The targets that reported each of a chunk of members `blocked` at or after `since` (a
-- pool's quarantine rule counts them), in one call: a pass over a pool of thousands costs
-- the client a few calls to pack and parse, not one command per member.
-- ARGV: ns, since, id, ...
-- -> {targets, ...} in the ids' order, each a list (empty when none)
local since = ARGV[2]
local out = {}
for i = 3, #ARGV do
  out[#out + 1] = redis.call('ZRANGE', k('blocked', ARGV[i]), since, '+inf', 'BYSCORE')
end
return out
