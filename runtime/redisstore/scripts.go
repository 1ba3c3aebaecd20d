package redisstore

import (
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Every state transition is one script, so it is atomic on the server and
// judged by the server's clock (TIME): client clock skew cannot shorten or
// stretch a lease. Each script touches the record key (KEYS[1]) and keys
// of its hash tag only (an entity's order record, the stream's items); the
// notification channel is passed in ARGV and carries the same hash tag, so
// the scripts run unchanged on a Cluster.
//
// go-redis retries a command after a network error (MaxRetries), so a
// script may run twice for one call when the first reply was lost. Each
// write carries an op id that the record keeps: a claim or a fenced write
// that finds its own op id already applied answers as the first run did
// instead of reporting a conflict with itself.

// maxFreshLua is maxFreshMicros for the scripts, which judge a fresh claim
// (version 2) as decodeRecord does: a lease or TTL past it is not one
// encodeFresh wrote.
var maxFreshLua = strconv.FormatInt(maxFreshMicros, 10)

// luaCommon parses and builds records; see record.go for the layout.
var luaCommon = `
local HDR = 91
local HDR3 = 99
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- steps_ok checks a version-4 record's steps (record.go): whole entries
-- of a 4-byte name length, the name, a 4-byte data length, the data.
local function steps_ok(s)
  local pos = 1
  while pos <= #s do
    if pos + 3 > #s then return false end
    local dpos = pos + 4 + struct.unpack('>I4', s, pos)
    if dpos + 3 > #s then return false end
    pos = dpos + 4 + struct.unpack('>I4', s, dpos)
    if pos - 1 > #s then return false end
  end
  return true
end
local function parse(v, key)
  if type(v) == 'table' then
    return nil, 'cannot read the record key: ' .. tostring(v.err)
  end
  if #v < HDR then
    return nil, 'value of ' .. #v .. ' bytes is shorter than the ' .. HDR .. '-byte header'
  end
  local magic, ver, st, fence, lease, exp, upd = struct.unpack('>BBBI8I8I8I8', v)
  if magic ~= 167 then return nil, 'not an idem record (first byte ' .. magic .. ')' end
  local claimed, steps = 0, ''
  if ver == 3 or ver == 4 then
    if #v < HDR3 then
      return nil, 'value of ' .. #v .. ' bytes is shorter than the ' .. HDR3 .. '-byte header'
    end
    claimed = struct.unpack('>I8', v, 92)
    if ver == 4 then
      -- only a call in progress or released carries steps (record.go)
      if st ~= 1 and st ~= 4 then return nil, 'unknown state ' .. st end
      steps = string.sub(v, HDR3 + 1)
      if not steps_ok(steps) then return nil, 'malformed steps' end
    end
  elseif ver == 2 then
    -- a fresh claim written by SET NX: lease and TTL are durations, the
    -- key's expiry (server clock) places them; +1 ms covers the whole-ms
    -- clock of the SET (record.go)
    if st ~= 1 then return nil, 'unknown state ' .. st end
    if lease > ` + maxFreshLua + ` or exp > ` + maxFreshLua + ` then
      return nil, string.format('fresh claim with a lease of %.0fµs and a TTL of %.0fµs', lease, exp)
    end
    local at = redis.call('PEXPIRETIME', key)
    if at < 0 then return nil, 'fresh claim without an expiry' end
    local ttl = exp
    exp = at * 1000 + 1000
    upd = exp - ttl - lease
    claimed = upd
    lease = exp - ttl
  elseif ver ~= 1 then
    return nil, 'unsupported record encoding version ' .. ver
  end
  if st < 1 or st > 4 then return nil, 'unknown state ' .. st end
  return {st = st, fence = fence, lease = lease, exp = exp, upd = upd, claimed = claimed, steps = steps,
    op = string.sub(v, 36, 43), owner = string.sub(v, 44, 59), fp = string.sub(v, 60, 91)}
end
-- enc builds a version-3 record with data (a finished record's result),
-- or, for a record in progress or released with steps, a version-4 one
-- whose data is its steps.
local function enc(st, fence, lease, exp, now, op, owner, fp, claimed, data)
  local ver = 3
  if (st == 1 or st == 4) and #data > 0 then ver = 4 end
  return struct.pack('>BBBI8I8I8I8', 167, ver, st, fence, lease, exp, now) .. op .. owner .. fp ..
    struct.pack('>I8', claimed) .. data
end
local function px(exp, now)
  local ms = math.floor((exp - now) / 1000)
  if ms < 1 then ms = 1 end
  return string.format('%d', ms)
end
local function note(st, fence)
  return st .. ':' .. string.format('%d', fence)
end
-- owned reads the record at key for a fenced write (step, append) by the
-- caller arg names (packed '>I8' fence, op id, owner): the record and its
-- value, or nil and the reply that refuses the write ({-1, state, fence}
-- when the caller does not own the key, {0, reason} for a record it
-- cannot read).
local function owned(key, arg)
  local v = redis.pcall('GET', key)
  if not v then return nil, {-1, 0, 0} end
  local r, err = parse(v, key)
  if not r then return nil, {0, err} end
  if r.st ~= 1 or r.owner ~= string.sub(arg, 17, 32) or r.fence ~= struct.unpack('>I8', arg) then
    return nil, {-1, r.st, r.fence}
  end
  return r, v
end
`

// claimScript: KEYS[1] record[, KEYS[2] the entity's order record]; ARGV
// owner, fingerprint, lease µs, ttl µs, channel, op id[, order time µs,
// grace µs, override 0/1]. Returns {status, fence, lease µs[, value]} with
// status an idemstore.ClaimStatus ({7, fence, last accepted µs} when out of
// order), or {0, reason} for a record it cannot read; value is the
// finished record for a replay, and the steps (record.go, version 4) of
// the retained record an acquired or taken-over claim resumes, which the
// new record keeps (a record made anew has none). The order record is
// "o1:<last accepted µs>", kept max(lease, ttl) after its last advance.
//
// The replay of a finished record is the hot path, served before anything
// else is parsed and without reading the clock: a finished record's Redis
// TTL ends no later than its expiry (px rounds down), so one that exists is
// live. Go reads the fence from the returned value.
var claimScript = redis.NewScript(claimSrc)

// claimSrc is claimScript's source; clockClaimScript (acks.go) derives
// from it.
var claimSrc = `
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and #v >= 99 and string.byte(v, 1) == 167 and string.byte(v, 2) == 3 or
    type(v) == 'string' and #v >= 91 and string.byte(v, 1) == 167 and string.byte(v, 2) == 1 then
  local st = string.byte(v, 3)
  if (st == 2 or st == 3) and string.sub(v, 60, 91) == ARGV[2] then return {st + 2, 0, 0, v} end
end
` + luaCommon + `
local now = now_us()
local fence, status, steps = 0, 1, ''
if v then
  local r, err = parse(v, KEYS[1])
  if not r then return {0, err} end
  fence = r.fence
  if now < r.exp then
    -- a retained record: a takeover or a claim after a release resumes
    -- its call, whose steps it keeps and returns; a record made anew
    -- (none, or past its expiry) starts without any
    steps = r.steps
    -- a live record keeps its first claim's fingerprint whatever its
    -- state: an expired lease or a release is free for that payload only
    if r.fp ~= ARGV[2] then return {6, r.fence, 0} end
    if r.st == 1 then
      if r.owner == ARGV[1] and r.op == ARGV[6] then
        -- our own claim, retried after a lost reply
        if #r.steps > 0 then return {1, r.fence, r.lease, r.steps} end
        return {1, r.fence, r.lease}
      end
      if now < r.lease then return {3, r.fence, r.lease} end
      status = 2
    elseif r.st == 2 or r.st == 3 then
      return {r.st + 2, r.fence, 0, v}
    end
  end
end
if #KEYS > 1 then
  local at, grace = tonumber(ARGV[7]), tonumber(ARGV[8])
  local ov = redis.pcall('GET', KEYS[2])
  if ov then
    if type(ov) == 'table' then return {0, 'cannot read the order record: ' .. tostring(ov.err)} end
    local last = string.match(ov, '^o1:(%-?%d+)$')
    if not last then return {0, 'the order record ' .. KEYS[2] .. ' is not an idem order record'} end
    last = tonumber(last)
    if ARGV[9] ~= '1' and at < last - grace then return {7, fence, last} end
    if last > at then at = last end
  end
  local keep = math.max(tonumber(ARGV[3]), tonumber(ARGV[4]))
  redis.call('SET', KEYS[2], 'o1:' .. string.format('%.0f', at), 'PX', px(now + keep, now))
end
fence = fence + 1
local lease = now + tonumber(ARGV[3])
local exp = lease + tonumber(ARGV[4])
redis.call('SET', KEYS[1], enc(1, fence, lease, exp, now, ARGV[6], ARGV[1], ARGV[2], now, steps), 'PX', px(exp, now))
if status == 2 then redis.call('PUBLISH', ARGV[5], note(1, fence)) end
if #steps > 0 then return {status, fence, lease, steps} end
return {status, fence, lease}
`

// writeScript is every fenced write, and the second half of every first
// execution, so it stands alone (no luaCommon closures to build) and takes
// two arguments. KEYS[1] record, KEYS[2] its stream's items (stream.go),
// whose expiry it sets to the record's (a release deletes them); ARGV[1] packed '>BI8I8' new state (1 for a
// heartbeat), fence, duration µs (the lease for a heartbeat, the TTL
// otherwise), then op id (8 bytes) and owner (16 bytes); ARGV[2] data. The
// channel is KEYS[1] .. ':done'. Returns {1, lease µs} when applied, {-1,
// state, fence} when the caller does not own the key, {0, reason} for a
// record it cannot read (the reasons are parse's, in luaCommon).
//
// A heartbeat or release keeps a version-4 record's steps (and its
// version); a completion or failure writes version 3 with its data.
//
// A fresh claim (version 2, see record.go) stores its TTL after the lease
// directly, so no write needs the key's expiry: a heartbeat keeps that TTL
// after the new lease, and a finished record written from a fresh claim
// records the finish time as its lease expiry (the lease ended there).
var writeScript = redis.NewScript(writeSrc)

var writeSrc = `
local v = redis.pcall('GET', KEYS[1])
if not v then return {-1, 0, 0} end
if type(v) == 'table' then return {0, 'cannot read the record key: ' .. tostring(v.err)} end
if #v < 91 then return {0, 'value of ' .. #v .. ' bytes is shorter than the 91-byte header'} end
local magic, ver, rst, rfence, rlease, rexp = struct.unpack('>BBBI8I8I8', v)
if magic ~= 167 then return {0, 'not an idem record (first byte ' .. magic .. ')'} end
if ver < 1 or ver > 4 then return {0, 'unsupported record encoding version ' .. ver} end
if ver >= 3 and #v < 99 then return {0, 'value of ' .. #v .. ' bytes is shorter than the 99-byte header'} end
if rst < 1 or rst > 4 or (ver == 2 and rst ~= 1) or (ver == 4 and rst ~= 1 and rst ~= 4) then
  return {0, 'unknown state ' .. rst}
end
local claimed = 0 -- version 1: unknown
if ver >= 3 then claimed = struct.unpack('>I8', v, 92) end
if ver == 4 then
  -- its steps, judged as parse (luaCommon) judges them
  local pos = 100
  while pos <= #v do
    if pos + 3 > #v then return {0, 'malformed steps'} end
    local dpos = pos + 4 + struct.unpack('>I4', v, pos)
    if dpos + 3 > #v then return {0, 'malformed steps'} end
    pos = dpos + 4 + struct.unpack('>I4', v, dpos)
    if pos - 1 > #v then return {0, 'malformed steps'} end
  end
end
if ver == 2 then
  -- judged as parse and decodeRecord judge it, before ownership
  if rlease > ` + maxFreshLua + ` or rexp > ` + maxFreshLua + ` then
    return {0, string.format('fresh claim with a lease of %.0fµs and a TTL of %.0fµs', rlease, rexp)}
  end
  local at = redis.call('PEXPIRETIME', KEYS[1])
  if at < 0 then return {0, 'fresh claim without an expiry'} end
  claimed = at * 1000 + 1000 - rexp - rlease
end
local st, fence, dur = struct.unpack('>BI8I8', ARGV[1])
local owner = string.sub(ARGV[1], 26, 41)
if string.sub(v, 44, 59) ~= owner or rfence ~= fence then return {-1, rst, rfence} end
local op = string.sub(ARGV[1], 18, 25)
if rst ~= 1 then
  if rst == st and string.sub(v, 36, 43) == op then return {1, rlease} end -- retried after a lost reply
  return {-1, rst, rfence}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local keep = rexp - rlease -- the TTL after the lease
if ver == 2 then keep = rexp; rlease = now end
local lease, exp, data, nver = rlease, now + dur, ARGV[2], 3
if st == 1 or st == 4 then
  -- a heartbeat or a release keeps the call's steps (version 4), a
  -- completion or failure replaces them with its result
  data = ''
  if ver == 4 then data, nver = string.sub(v, 100), 4 end
end
if st == 1 then
  lease = now + dur
  exp = lease + keep
end
local ms = math.floor((exp - now) / 1000)
if ms < 1 then ms = 1 end
redis.call('SET', KEYS[1], struct.pack('>BBBI8I8I8I8', 167, nver, st, fence, lease, exp, now) .. op .. owner ..
  string.sub(v, 60, 91) .. struct.pack('>I8', claimed) .. data, 'PX', string.format('%d', ms))
-- the stream's items (stream.go), if any, expire with their record; a
-- released run's go at once (the next claim starts a new run)
if #KEYS > 1 then
  if st == 4 then redis.call('DEL', KEYS[2])
  else redis.call('PEXPIREAT', KEYS[2], redis.call('PEXPIRETIME', KEYS[1])) end
end
if st ~= 1 then redis.call('PUBLISH', KEYS[1] .. ':done', st .. ':' .. string.format('%d', fence)) end
return {1, lease}
`

// readScript returns {now µs, value or false, PEXPIRETIME ms} so Get and
// Wait judge liveness by the server clock of the node that holds the key
// (PEXPIRETIME places a fresh claim's times), or {now, false, 0, error}
// when the key holds something GET cannot read.
var readScript = redis.NewScript(luaCommon + `
local now = now_us()
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' then return {now, false, 0, tostring(v.err)} end
return {now, v, redis.call('PEXPIRETIME', KEYS[1])}
`)

// deleteScript removes the record whatever it holds (also the way to clear
// a corrupt one) and its stream's items, and wakes waiters. KEYS[1]
// record, KEYS[2] items; ARGV channel.
var deleteScript = redis.NewScript(deleteSrc)

var deleteSrc = `
local n = redis.call('DEL', KEYS[1])
if #KEYS > 1 then redis.call('DEL', KEYS[2]) end -- the stream's items
if n == 1 then redis.call('PUBLISH', ARGV[1], 'd:0') end
return n
`

// forceReleaseScript releases a record whatever its owner and bumps its
// fence, so a still-running owner's fenced writes fail. KEYS[1] record;
// ARGV channel, op id. Returns {1, new value}, {-1} when there is no
// record, {0, reason} for a value it cannot read.
var forceReleaseScript = redis.NewScript(forceReleaseSrc)

var forceReleaseSrc = luaCommon + `
local v = redis.pcall('GET', KEYS[1])
if not v then return {-1} end
local r, err = parse(v, KEYS[1])
if not r then return {0, err} end
local now = now_us()
local keep = r.exp - r.upd
if keep < 0 then keep = 0 end
local fence = r.fence + 1
local exp = now + keep
local nv = enc(4, fence, r.lease, exp, now, ARGV[2], string.rep('\0', 16), r.fp, r.claimed, r.steps)
redis.call('SET', KEYS[1], nv, 'PX', px(exp, now))
redis.call('PUBLISH', ARGV[1], note(4, fence))
return {1, nv}
`

// cleanupScript deletes a record that is past its expiry by the server's
// clock, and its stream's items. KEYS[1] record, KEYS[2] items; ARGV
// channel. Returns 1 when it deleted it.
var cleanupScript = redis.NewScript(cleanupSrc)

var cleanupSrc = luaCommon + `
local v = redis.pcall('GET', KEYS[1])
if not v then return 0 end
local r = parse(v, KEYS[1])
if not r or now_us() < r.exp then return 0 end
redis.call('DEL', KEYS[1])
if #KEYS > 1 then redis.call('DEL', KEYS[2]) end -- the stream's items
redis.call('PUBLISH', ARGV[1], 'd:0')
return 1
`

// scriptSet is the scripts that publish, in one publishing flavour.
type scriptSet struct {
	claim, clockClaim, write, del, forceRelease, cleanup, appendItem, readStream *redis.Script
}

// classicScripts publish with PUBLISH, which a standalone or Sentinel
// server delivers to its SUBSCRIBE clients; shardedScripts publish with
// SPUBLISH (Redis 7.0), which a Cluster delivers only to the SSUBSCRIBE
// clients of the shard that owns the channel's slot instead of
// broadcasting it over the cluster bus to every node. Every channel
// carries its record key's hash tag, so the SPUBLISH stays in the slot of
// the script's key, as a script in a Cluster must.
var (
	classicScripts = &scriptSet{claimScript, clockClaimScript, writeScript, deleteScript, forceReleaseScript, cleanupScript,
		appendScript, readStreamScript}
	shardedScripts = &scriptSet{
		claim:        redis.NewScript(shardedSrc(claimSrc)),
		clockClaim:   redis.NewScript(shardedSrc(clockClaimSrc)),
		write:        redis.NewScript(shardedSrc(writeSrc)),
		del:          redis.NewScript(shardedSrc(deleteSrc)),
		forceRelease: redis.NewScript(shardedSrc(forceReleaseSrc)),
		cleanup:      redis.NewScript(shardedSrc(cleanupSrc)),
		appendItem:   redis.NewScript(shardedSrc(appendSrc)),
		readStream:   readStreamScript, // publishes nothing
	}
)

// shardedSrc turns a script's PUBLISH calls into SPUBLISH; it panics at
// start-up if a source has none, so a script cannot silently stop
// notifying on a Cluster.
func shardedSrc(src string) string {
	out := strings.ReplaceAll(src, "redis.call('PUBLISH',", "redis.call('SPUBLISH',")
	if out == src {
		panic("redisstore: a publishing script has no PUBLISH call")
	}
	return out
}
