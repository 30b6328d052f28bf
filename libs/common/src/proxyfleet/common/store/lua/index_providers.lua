-- Build the providers' indexes (`provider:<name>`, see _lib.lua) from `proxies`, for a
-- registry written before they existed: one batch per call, in id order; the last batch
-- sets the marker `provider_index`, after which readers trust the indexes. Each batch is
-- atomic, and the scripts keep the indexes between batches, so a proxy created, adopted or
-- deleted meanwhile is indexed exactly: before its batch the batch sees it as it is, after
-- it the script that changed it did.
-- ARGV: ns, after (the last id of the previous batch; '' for the first), batch, now
-- -> {next ('' once done), ids added to an index by this batch}
local after, batch = ARGV[2], tonumber(ARGV[3])
local start = '-'
if after ~= '' then start = '(' .. after end
local ids = redis.call('ZRANGE', k('proxies'), start, '+', 'BYLEX', 'LIMIT', 0, batch)
local added = 0
for _, id in ipairs(ids) do
  local p = redis.call('HMGET', k('proxy', id), 'provider', 'phase')
  if p[2] and p[2] ~= 'deleted' then
    added = added + redis.call('ZADD', k('provider', p[1] or ''), 0, id)
  end
end
if #ids < batch then
  redis.call('SET', k('provider_index'), ARGV[4])
  return {'', added}
end
return {ids[#ids], added}
