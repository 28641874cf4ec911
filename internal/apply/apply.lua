-- projector apply script: guard + ordered write program for ONE hash slot.
-- KEYS[1]: a key of the slot (for routing).
-- ARGV[1]: mode. "u": idempotency markers guard the writes; "g": offset watermarks do;
--   "c": like "u" but only checks the markers (sets none, writes nothing).
-- mode u: ARGV[2]=n, then n x (markerKey, eventId, origin, expireAtMs).
--   If any marker exists, nothing is written and {0, i1, v1, i2, v2, ...} is returned
--   (i: 1-based marker index, v: stored origin). Otherwise all markers are set.
-- mode g: ARGV[2]=watermark hash, ARGV[3]=n, then n x (field, firstOffset, lastOffset).
--   KEYS[2], when given, is the meta hash: unless its status is "ready" or "paused" (a batch
--   planned before a pause completes), nothing is written and {-1, status} is returned
--   (Redis lost its data, or a replay is running).
--   If any stored watermark >= its firstOffset, nothing is written and
--   {0, i1, wm1, ...} is returned. Otherwise the fields are set to lastOffset.
--   Then m, and m x (field, value): the hold:<projection> fields of the meta
--   hash the batch was planned with; if the meta hash holds others, nothing is
--   written and {-2} is returned (plan again).
-- Then the write program: per write its kind, then the kind's values (see the
--   loop below; numbers are decimal integers, times Unix ms, expireAt 0 = none).
-- Returns {1, writesApplied}.
local mode = ARGV[1]
local n = tonumber(ARGV[2])
local i = 3
local function fmt(x) return string.format('%.0f', x) end
local exp = {}
local slides = {}
-- bump records that key k must expire at `at` or later. slide marks keys
-- whose expiry follows their newest entry (it usually moves with every write).
local function bump(k, at, slide)
  if at > 0 then
    local c = exp[k]
    if c == nil or at > c then exp[k] = at end
    if slide then slides[k] = true end
  end
end

if mode == 'c' then
  local found = {}
  for j = 0, n - 1 do
    local b = i + j * 4
    local v = redis.call('HGET', ARGV[b], ARGV[b + 1])
    if v then
      found[#found + 1] = j + 1
      found[#found + 1] = v
    end
  end
  if #found > 0 then
    table.insert(found, 1, 0)
    return found
  end
  return {1, 0}
elseif mode == 'u' then
  -- HSETNX sets a missing marker and reports an existing one in one call;
  -- when any exists, the markers set here are deleted again (nothing written).
  local found = {}
  local set = {}
  for j = 0, n - 1 do
    local b = i + j * 4
    if redis.call('HSETNX', ARGV[b], ARGV[b + 1], ARGV[b + 2]) == 0 then
      found[#found + 1] = j + 1
      found[#found + 1] = redis.call('HGET', ARGV[b], ARGV[b + 1])
    else
      set[#set + 1] = b
    end
  end
  if #found > 0 then
    for _, b in ipairs(set) do
      redis.call('HDEL', ARGV[b], ARGV[b + 1])
    end
    table.insert(found, 1, 0)
    return found
  end
  for j = 0, n - 1 do
    local b = i + j * 4
    bump(ARGV[b], tonumber(ARGV[b + 3]))
  end
  i = i + n * 4
else
  n = tonumber(ARGV[3])
  local h = 4 + n * 3
  local m = tonumber(ARGV[h])
  if KEYS[2] then
    local meta = redis.call('HGETALL', KEYS[2])
    local status = nil
    local holds = {}
    local nholds = 0
    for j = 1, #meta, 2 do
      if meta[j] == 'status' then
        status = meta[j + 1]
      elseif string.sub(meta[j], 1, 5) == 'hold:' then
        holds[meta[j]] = meta[j + 1]
        nholds = nholds + 1
      end
    end
    if status ~= 'ready' and status ~= 'paused' then
      return {-1, status or ''}
    end
    if nholds ~= m then
      return {-2}
    end
    for j = 0, m - 1 do
      if holds[ARGV[h + 1 + 2 * j]] ~= ARGV[h + 2 + 2 * j] then
        return {-2}
      end
    end
  end
  local wmKey = ARGV[2]
  i = 4
  local found = {}
  for j = 0, n - 1 do
    local b = i + j * 3
    local v = redis.call('HGET', wmKey, ARGV[b])
    if v and tonumber(v) >= tonumber(ARGV[b + 1]) then
      found[#found + 1] = j + 1
      found[#found + 1] = v
    end
  end
  if #found > 0 then
    table.insert(found, 1, 0)
    return found
  end
  for j = 0, n - 1 do
    local b = i + j * 3
    redis.call('HSET', wmKey, ARGV[b], ARGV[b + 2])
  end
  i = h + 1 + 2 * m
end

local trims = {}
local guards = {}
local applied = 0

local function flushTrims()
  for k, t in pairs(trims) do
    if t[1] > 0 and t[3] then
      redis.call('ZREMRANGEBYRANK', k, 0, -(t[1] + 1))
    end
    if t[2] > 0 then
      local top = redis.call('ZRANGE', k, -1, -1, 'WITHSCORES')
      if top[2] then
        redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. fmt(tonumber(top[2]) - t[2]))
      end
    end
  end
  trims = {}
end

local function guardOf(g)
  local c = guards[g]
  if c == nil then
    local v = redis.call('GET', g)
    if v then c = tonumber(v) else c = -1 end
    guards[g] = c
  end
  return c
end

local function targets(key, registry)
  if registry ~= '' then
    return redis.call('SMEMBERS', registry)
  end
  return {key}
end

while i <= #ARGV do
  local kind = ARGV[i]
  local key = ARGV[i + 1]
  if kind == '1' then -- IncrBy: key, delta, expireAt
    -- a counter's expiry is a function of its key (bucket end + ttl): it is
    -- set when the counter is created, never looked at again
    local num = ARGV[i + 2]
    if redis.call('INCRBY', key, num) == tonumber(num) then
      bump(key, tonumber(ARGV[i + 3]))
    end
    applied = applied + 1
    i = i + 4
  elseif kind == '2' then -- ZIncrBy: key, member, delta, expireAt
    redis.call('ZINCRBY', key, ARGV[i + 3], ARGV[i + 2])
    bump(key, tonumber(ARGV[i + 4]))
    applied = applied + 1
    i = i + 5
  elseif kind == '3' then -- ZAddMax: key, member, score, expireAt, keep, retentionMs, guardKey
    local num = ARGV[i + 3]
    local guard = ARGV[i + 7]
    if guard == '' or tonumber(num) > guardOf(guard) then
      local added = redis.call('ZADD', key, 'GT', num, ARGV[i + 2])
      local keep = tonumber(ARGV[i + 5])
      local ret = tonumber(ARGV[i + 6])
      if keep > 0 or ret > 0 then
        -- the size trim is needed only when a member was added: every add
        -- trims, so a set that did not grow is within its size already
        local t = trims[key]
        if t then
          t[1], t[2] = keep, ret
          if added > 0 then t[3] = true end
        else
          trims[key] = {keep, ret, added > 0}
        end
      end
      bump(key, tonumber(ARGV[i + 4]), true)
      applied = applied + 1
    end
    i = i + 8
  elseif kind == '4' then -- SetValue: key, value, expireAt
    redis.call('SET', key, ARGV[i + 2])
    bump(key, tonumber(ARGV[i + 3]))
    applied = applied + 1
    i = i + 4
  elseif kind == '5' then -- SetMax: key, score, expireAt
    flushTrims()
    local num = ARGV[i + 2]
    local s = tonumber(num)
    local cur = redis.call('GET', key)
    if not cur or tonumber(cur) < s then
      redis.call('SET', key, num)
      applied = applied + 1
    end
    if guards[key] ~= nil and guards[key] < s then guards[key] = s end
    bump(key, tonumber(ARGV[i + 3]))
    i = i + 4
  elseif kind == '6' then -- ZRemUpTo: key, score, registryKey
    flushTrims()
    local num = ARGV[i + 2]
    for _, k in ipairs(targets(key, ARGV[i + 3])) do
      applied = applied + redis.call('ZREMRANGEBYSCORE', k, '-inf', num)
    end
    i = i + 4
  elseif kind == '7' then -- ZRemMemberUpTo: key, member, score
    flushTrims()
    local member = ARGV[i + 2]
    local s = redis.call('ZSCORE', key, member)
    if s and tonumber(s) <= tonumber(ARGV[i + 3]) then
      applied = applied + redis.call('ZREM', key, member)
    end
    i = i + 4
  elseif kind == '8' then -- ZRemPrefixUpTo: key, member, score, registryKey (history day entries of one product)
    flushTrims()
    local member = ARGV[i + 2]
    local limit = tonumber(ARGV[i + 3])
    for _, k in ipairs(targets(key, ARGV[i + 4])) do
      local all = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
      for j = 1, #all, 2 do
        -- history members are <product>@<day>: the day is always 10 bytes, so
        -- product p7 must not match p7@b@2026-12-02 (product p7@b)
        if #all[j] == #member + 10 and string.sub(all[j], 1, #member) == member and tonumber(all[j + 1]) <= limit then
          applied = applied + redis.call('ZREM', k, all[j])
        end
      end
    end
    i = i + 5
  elseif kind == '9' then -- SAdd: key, member, expireAt
    redis.call('SADD', key, ARGV[i + 2])
    bump(key, tonumber(ARGV[i + 3]), true)
    i = i + 4
  else
    return redis.error_reply('projector: unknown write kind ' .. tostring(kind))
  end
end
flushTrims()

-- Expiry only moves later. A sliding key usually gets a later expiry: try
-- PEXPIREAT GT first (one call); it does nothing on a key without expiry (a
-- new key), which the PEXPIRETIME check then finds. Other keys keep the
-- expiry they were created with, so they are checked first.
for k, at in pairs(exp) do
  local a = fmt(at)
  if not (slides[k] and redis.call('PEXPIREAT', k, a, 'GT') == 1) then
    local cur = redis.call('PEXPIRETIME', k)
    if cur == -1 or (cur >= 0 and at > cur) then
      redis.call('PEXPIREAT', k, a)
    end
  end
end
return {1, applied}
