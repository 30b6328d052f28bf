-- The few fields the pool controller reads of each member (store/pools.py MEMBER_FIELDS),
-- for a chunk of members in one call: a pass over a pool of thousands costs the client a
-- few calls to pack and parse, not one command per member.
-- ARGV: ns, nfields, field, ..., id, ...
-- -> {row, ...} in the ids' order, each row the fields' values (nil where absent)
local nfields = tonumber(ARGV[2])
local fields = {}
for i = 1, nfields do fields[i] = ARGV[2 + i] end
local out = {}
for i = 3 + nfields, #ARGV do
  out[#out + 1] = redis.call('HMGET', k('proxy', ARGV[i]), unpack(fields))
end
return out
