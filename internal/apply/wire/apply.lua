-- projector apply script: guard + ordered write program for ONE hash slot
-- (or, in MODE_USERS, for several users of a standalone server).
-- It runs after the protocol's header (protocol.go: luaHeader), which
-- declares the MODE_*, KIND_*, REPLY_* values named here.
-- KEYS[1]: a key of the slot (for routing).
-- ARGV[1]: the mode. MODE_USER: idempotency markers guard the writes;
--   MODE_USERS: several users' MODE_USER calls in one;
--   MODE_GLOBAL: offset watermarks guard the writes; MODE_GLOBAL_GAPS: as
--   MODE_GLOBAL, and a watermark below a range is a gap. Another mode is an error.
-- MODE_USER: ARGV[2]=n, then the n markers in runs of one marker hash:
--   markerKey, expireAtMs, count, then count x (eventId, origin).
--   If any marker exists, nothing is written and {REPLY_FOUND, i1, v1, i2, v2, ...}
--   is returned (i: 1-based marker index, v: stored origin). Otherwise all markers
--   are set, and the write program follows.
-- MODE_USERS: ARGV[2]=u, then u users, each: n, its n markers in runs as in
--   MODE_USER, w, then its write program of w arguments. Each user's markers
--   guard only that user's writes: a user with an existing marker gets nothing
--   written, the others are applied. Returns {REPLY_APPLIED, writesApplied} when
--   no marker existed, else {REPLY_PARTIAL, writesApplied, then per user with
--   existing markers: its 1-based index, k, then k x (i, v) as in REPLY_FOUND}.
-- MODE_GLOBAL, MODE_GLOBAL_GAPS: ARGV[2]=watermark hash, ARGV[3]=n, then
--   n x (field, firstOffset, lastOffset).
--   KEYS[2], when given, is the meta hash: unless its status is STATUS_READY or
--   STATUS_PAUSED (a batch planned before a pause completes), nothing is written
--   and {REPLY_NOT_READY, status} is returned (Redis lost its data, or a replay is running).
--   If any stored watermark >= its firstOffset, nothing is written and
--   {REPLY_FOUND, i1, wm1, ...} is returned. MODE_GLOBAL_GAPS also checks that no
--   stored watermark lies below its firstOffset - 1 (Redis went back in time after
--   the records before the batch were applied): else nothing is written and
--   {REPLY_GAP, i1, wm1, ...} is returned. Otherwise the fields are set to lastOffset.
--   Then m, and m x (field, value): the hold fields (HOLD_PREFIX .. projection) of
--   the meta hash the batch was planned with; if the meta hash holds others,
--   nothing is written and {REPLY_HOLDS_CHANGED} is returned (plan again).
-- The write program (numbers are decimal integers, times Unix ms, expireAt 0 = none):
--   np, then np ZAddMax profiles: keep, retentionMs, ttl ('' = no expiry), guardKey;
--   nc, then nc counters: key, delta, expireAt (INCRBY; counter keys take no other write);
--   then per write its kind (KIND_*) and the kind's values (see program below;
--   ZAddMax writes come per set and ZIncrBy writes per key: the writes between
--   two removals as one entry). Another kind is an error.
-- Returns {REPLY_APPLIED, writesApplied}.
local mode = ARGV[1]
-- Every call runs this body anew and makes each table and function in it
-- again (about 0.3 us of Redis CPU each): tables are made only when needed,
-- and a MODE_USERS call makes the functions once for all its users.
local format = string.format
local exp = {}
local slides = nil
-- bump records that key k must expire at `at` or later. slide marks keys
-- whose expiry follows their newest entry (it usually moves with every write).
local function bump(k, at, slide)
  if at > 0 then
    local c = exp[k]
    if c == nil or at > c then exp[k] = at end
    if slide then
      slides = slides or {}
      slides[k] = true
    end
  end
end

-- setMarkers sets the n markers whose runs start at ARGV[i]. HSETNX sets a
-- missing marker and reports an existing one in one call; when any existed,
-- the markers set here are deleted again and {i1, v1, ...} is returned (as
-- in REPLY_FOUND), else nil and the marker hashes' expiry is moved. The
-- second result is the index after the runs.
local function setMarkers(i, n)
  local found = nil
  local b = i
  local j = 0
  while j < n do
    local key, cnt = ARGV[i], tonumber(ARGV[i + 2])
    i = i + 3
    for _ = 1, cnt do
      j = j + 1
      local v = nil
      if redis.call('HSETNX', key, ARGV[i], ARGV[i + 1]) == 0 then
        v = redis.call('HGET', key, ARGV[i])
      end
      if v then
        found = found or {}
        found[#found + 1] = j
        found[#found + 1] = v
      end
      i = i + 2
    end
  end
  -- the runs again: undo them when a marker existed, else move the marker
  -- hashes' expiry
  local m = 1 -- the next entry of found
  j = 0
  while j < n do
    local key, cnt = ARGV[b], tonumber(ARGV[b + 2])
    if found then
      for k = 1, cnt do
        -- found lists the existing markers in order: delete only the others
        if found[m] == j + k then
          m = m + 2
        else
          redis.call('HDEL', key, ARGV[b + 1 + 2 * k])
        end
      end
    else
      bump(key, tonumber(ARGV[b + 1]))
    end
    j = j + cnt
    b = b + 3 + 2 * cnt
  end
  return found, i
end

-- guards caches the guard values a program read (see KIND_ZADDMAX).
local guards = nil

-- trimToTop removes the members of k older than its top member - ret.
local function trimToTop(k, ret)
  local top = redis.call('ZRANGE', k, -1, -1, 'WITHSCORES')
  if top[2] then
    redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. format('%.0f', tonumber(top[2]) - ret))
  end
end

-- writeSet applies the ZAddMax writes of one entry to the set k: the pairs
-- add (score, member, ...), or when add is nil the one pair at ARGV[first]
-- (member, score); hi and lo are their highest and lowest score. It trims
-- the set and moves its expiry. A windowed set expires at newest + ttl: when
-- PEXPIREAT GT moves the expiry, hi is the newest ts (trim by it, no read);
-- otherwise only members written here can lie below the window (every entry
-- leaves none behind), so the set is trimmed only when one of them lies below
-- PEXPIRETIME - ttl - retention, or, for a set without expiry (a new one),
-- when it holds members not written here (ZCARD > added) or one written here
-- lies below hi - retention.
local function writeSet(k, keep, ret, ttl, hi, lo, add, first)
  local added = 0
  if add then
    for j = 1, #add, 1000 do
      added = added + redis.call('ZADD', k, 'GT', unpack(add, j, math.min(j + 999, #add)))
    end
  else
    added = redis.call('ZADD', k, 'GT', ARGV[first + 1], ARGV[first])
  end
  if keep > 0 then
    redis.call('ZREMRANGEBYRANK', k, 0, -(keep + 1))
  end
  if not ttl then
    if ret > 0 then trimToTop(k, ret) end
    return
  end
  local a = format('%.0f', hi + ttl)
  if redis.call('PEXPIREAT', k, a, 'GT') == 1 then
    if ret > 0 then
      redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. format('%.0f', hi - ret))
    end
    return
  end
  local cur = redis.call('PEXPIRETIME', k)
  if cur == -1 then -- a new key (or one without expiry)
    redis.call('PEXPIREAT', k, a)
    if ret > 0 then
      if redis.call('ZCARD', k) ~= added then
        trimToTop(k, ret)
      elseif lo < hi - ret then
        -- every member was added here: the top member is hi
        redis.call('ZREMRANGEBYSCORE', k, '-inf', '(' .. format('%.0f', hi - ret))
      end
    end
  elseif ret > 0 and lo < cur - ttl - ret then
    -- cur - ttl is the newest ts only while the lifetime is unchanged
    -- (after it was lowered it lies later, and trimming by it would
    -- remove live members): it only tells whether a trim is needed,
    -- which then goes by the top member
    trimToTop(k, ret)
  end
end

-- program runs the write program in ARGV[i .. stop] and returns the number
-- of writes applied. The guards a program read are its own.
local function program(i, stop)
  local applied = 0
  guards = nil
  -- the ZAddMax profiles: profile p is ARGV[pb + 4p - 4 .. pb + 4p - 1] =
  -- keep, retentionMs, ttl ('' = none), guardKey
  local pb = i + 1
  i = pb + 4 * tonumber(ARGV[i])

  -- the counters: a counter's expiry is a function of its key (bucket end +
  -- ttl): it is set when INCRBY creates the counter (NX: a counter that held
  -- 0 keeps its expiry), never looked at again
  local nc = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, nc do
    local key, num, at = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if redis.call('INCRBY', key, num) == tonumber(num) and at ~= '0' then
      redis.call('PEXPIREAT', key, at, 'NX')
    end
    applied = applied + 1
    i = i + 3
  end

  while i <= stop do
    local kind = ARGV[i]
    local key = ARGV[i + 1]
    if kind == KIND_ZADDMAX then -- ZAddMax writes of one set: key, profile, n, then n x (member, score)
      local b = pb + 4 * tonumber(ARGV[i + 2]) - 4
      local keep, ret, ttl, guard = tonumber(ARGV[b]), tonumber(ARGV[b + 1]), ARGV[b + 2], ARGV[b + 3]
      ttl = ttl ~= '' and tonumber(ttl)
      -- gv: the guard's value (-1: none), read from Redis once per program (guards) and
      -- raised there by SetMax, a barrier that ends this entry
      local gv = -1
      if guard ~= '' then
        guards = guards or {}
        gv = guards[guard]
        if gv == nil then
          local v = redis.call('GET', guard)
          if v then gv = tonumber(v) else gv = -1 end
          guards[guard] = gv
        end
      end
      -- the pairs above the guard: the first at ARGV[first], more in add
      local hi, lo, first, add = nil, nil, nil, nil
      local j = i + 4
      i = j + 2 * tonumber(ARGV[i + 3])
      while j < i do
        local num = ARGV[j + 1]
        local s = tonumber(num)
        if s > gv then
          if not hi then
            hi, lo, first = s, s, j
          else
            if s > hi then hi = s end
            if s < lo then lo = s end
            add = add or {ARGV[first + 1], ARGV[first]}
            add[#add + 1] = num
            add[#add + 1] = ARGV[j]
          end
          applied = applied + 1
        end
        j = j + 2
      end
      if hi then writeSet(key, keep, ret, ttl, hi, lo, add, first) end
    elseif kind == KIND_ZINCRBY then -- ZIncrBy writes of one key: key, expireAt, n, then n x (member, delta)
      bump(key, tonumber(ARGV[i + 2]))
      local j = i + 4
      i = j + 2 * tonumber(ARGV[i + 3])
      while j < i do
        redis.call('ZINCRBY', key, ARGV[j + 1], ARGV[j])
        applied = applied + 1
        j = j + 2
      end
    elseif kind == KIND_SETVALUE then -- SetValue: key, value, expireAt
      redis.call('SET', key, ARGV[i + 2])
      bump(key, tonumber(ARGV[i + 3]))
      applied = applied + 1
      i = i + 4
    elseif kind == KIND_SETMAX then -- SetMax: key, score, expireAt
      local num = ARGV[i + 2]
      local s = tonumber(num)
      local cur = redis.call('GET', key)
      if not cur or tonumber(cur) < s then
        redis.call('SET', key, num)
        applied = applied + 1
      end
      if guards and guards[key] ~= nil and guards[key] < s then guards[key] = s end
      bump(key, tonumber(ARGV[i + 3]))
      i = i + 4
    elseif kind == KIND_ZREMUPTO then -- ZRemUpTo: key, score, registryKey
      local num = ARGV[i + 2]
      local registry = ARGV[i + 3]
      for _, k in ipairs(registry ~= '' and redis.call('SMEMBERS', registry) or {key}) do
        applied = applied + redis.call('ZREMRANGEBYSCORE', k, '-inf', num)
      end
      i = i + 4
    elseif kind == KIND_ZREMMEMBERUPTO then -- ZRemMemberUpTo: key, member, score
      local member = ARGV[i + 2]
      local s = redis.call('ZSCORE', key, member)
      if s and tonumber(s) <= tonumber(ARGV[i + 3]) then
        applied = applied + redis.call('ZREM', key, member)
      end
      i = i + 4
    elseif kind == KIND_ZREMPREFIXUPTO then -- ZRemPrefixUpTo: key, member, score, registryKey (history day entries of one product)
      local member = ARGV[i + 2]
      local limit = tonumber(ARGV[i + 3])
      local registry = ARGV[i + 4]
      for _, k in ipairs(registry ~= '' and redis.call('SMEMBERS', registry) or {key}) do
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
    elseif kind == KIND_SADD then -- SAdd: key, member, expireAt
      redis.call('SADD', key, ARGV[i + 2])
      bump(key, tonumber(ARGV[i + 3]), true)
      i = i + 4
    else
      error('projector: unknown write kind ' .. tostring(kind))
    end
  end
  return applied
end

-- Expiry only moves later. A sliding key usually gets a later expiry: try
-- PEXPIREAT GT first (one call); it does nothing on a key without expiry (a
-- new key), which the PEXPIRETIME check then finds. Other keys keep the
-- expiry they were created with, so they are checked first.
local function expire()
  for k, at in pairs(exp) do
    local a = format('%.0f', at)
    if not (slides and slides[k] and redis.call('PEXPIREAT', k, a, 'GT') == 1) then
      local cur = redis.call('PEXPIRETIME', k)
      if cur == -1 or (cur >= 0 and at > cur) then
        redis.call('PEXPIREAT', k, a)
      end
    end
  end
end

if mode == MODE_USER then
  local found, i = setMarkers(3, tonumber(ARGV[2]))
  if found then
    table.insert(found, 1, REPLY_FOUND)
    return found
  end
  local applied = program(i, #ARGV)
  expire()
  return {REPLY_APPLIED, applied}
elseif mode == MODE_USERS then
  local i = 3
  local applied = 0
  local out = nil
  for u = 1, tonumber(ARGV[2]) do
    local found, p = setMarkers(i + 1, tonumber(ARGV[i]))
    local stop = p + tonumber(ARGV[p])
    if found then
      out = out or {REPLY_PARTIAL, 0}
      out[#out + 1] = u
      out[#out + 1] = #found / 2
      for k = 1, #found do out[#out + 1] = found[k] end
    else
      applied = applied + program(p + 1, stop)
    end
    i = stop + 1
  end
  expire()
  if out then
    out[2] = applied
    return out
  end
  return {REPLY_APPLIED, applied}
elseif mode == MODE_GLOBAL or mode == MODE_GLOBAL_GAPS then
  local n = tonumber(ARGV[3])
  local h = 4 + n * 3
  local m = tonumber(ARGV[h])
  if KEYS[2] then
    local meta = redis.call('HGETALL', KEYS[2])
    local status = nil
    local holds = {}
    local nholds = 0
    for j = 1, #meta, 2 do
      if meta[j] == FIELD_STATUS then
        status = meta[j + 1]
      elseif string.sub(meta[j], 1, #HOLD_PREFIX) == HOLD_PREFIX then
        holds[meta[j]] = meta[j + 1]
        nholds = nholds + 1
      end
    end
    if status ~= STATUS_READY and status ~= STATUS_PAUSED then
      return {REPLY_NOT_READY, status or ''}
    end
    if nholds ~= m then
      return {REPLY_HOLDS_CHANGED}
    end
    for j = 0, m - 1 do
      if holds[ARGV[h + 1 + 2 * j]] ~= ARGV[h + 2 + 2 * j] then
        return {REPLY_HOLDS_CHANGED}
      end
    end
  end
  local wmKey = ARGV[2]
  local i = 4
  local found = {}
  local gaps = nil
  for j = 0, n - 1 do
    local b = i + j * 3
    local v = redis.call('HGET', wmKey, ARGV[b])
    if v and tonumber(v) >= tonumber(ARGV[b + 1]) then
      found[#found + 1] = j + 1
      found[#found + 1] = v
    elseif v and mode == MODE_GLOBAL_GAPS and tonumber(v) < tonumber(ARGV[b + 1]) - 1 then
      gaps = gaps or {REPLY_GAP}
      gaps[#gaps + 1] = j + 1
      gaps[#gaps + 1] = v
    end
  end
  if #found > 0 then
    table.insert(found, 1, REPLY_FOUND)
    return found
  end
  if gaps then
    return gaps
  end
  for j = 0, n - 1 do
    local b = i + j * 3
    redis.call('HSET', wmKey, ARGV[b], ARGV[b + 2])
  end
  local applied = program(h + 1 + 2 * m, #ARGV)
  expire()
  return {REPLY_APPLIED, applied}
else
  return redis.error_reply('projector: unknown mode ' .. tostring(mode))
end
