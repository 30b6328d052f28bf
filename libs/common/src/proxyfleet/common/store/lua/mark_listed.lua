-- A provisioner has listed its provider's resources (and re-adopted the survivors) since
-- this registry began: `listed:<provider>` in the installation marker, so a reset (which
-- takes the marker with it) forgets it. Written only to the marker the listing was made
-- under: a reset in between leaves the new store unmarked for this provider.
-- ARGV: ns, provider, now, the marker's created_at   -> 1 written | 0 another marker
local key = k('installation')
if redis.call('HGET', key, 'created_at') ~= ARGV[4] then return 0 end
redis.call('HSET', key, 'listed:' .. ARGV[2], ARGV[3])
return 1
