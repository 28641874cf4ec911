-- projector seal script: raises each master's own per-partition watermarks (px:nwm)
-- to the batch's last offsets. It runs after the protocol's header (protocol.go:
-- luaHeader), which declares the MODE_* and REPLY_* values named here.
-- KEYS[1]: the hash. ARGV[1]: MODE_GLOBAL_GAPS to
-- check first that no stored watermark lies below a range's first offset - 1
-- (that master went back in time: then nothing is written and
-- {REPLY_GAP, i1, wm1, ...} is returned), MODE_GLOBAL not to; ARGV[2]: n;
-- then n x (field, firstOffset, lastOffset). Every field is written (the
-- larger of the stored and the new offset), so the call is a write that a
-- following WAIT waits for. Returns {REPLY_APPLIED, n}.
local check = ARGV[1]
if check ~= MODE_GLOBAL and check ~= MODE_GLOBAL_GAPS then
  return redis.error_reply('projector: unknown mode ' .. tostring(check))
end
local n = tonumber(ARGV[2])
local cur = {}
local gaps = nil
for j = 0, n - 1 do
  local b = 3 + 3 * j
  local v = redis.call('HGET', KEYS[1], ARGV[b])
  cur[j] = v and tonumber(v)
  if check == MODE_GLOBAL_GAPS and v and cur[j] < tonumber(ARGV[b + 1]) - 1 then
    gaps = gaps or {REPLY_GAP}
    gaps[#gaps + 1] = j + 1
    gaps[#gaps + 1] = v
  end
end
if gaps then return gaps end
for j = 0, n - 1 do
  local b = 3 + 3 * j
  local last = tonumber(ARGV[b + 2])
  if cur[j] and cur[j] > last then last = cur[j] end
  redis.call('HSET', KEYS[1], ARGV[b], tostring(last))
end
return {REPLY_APPLIED, n}
