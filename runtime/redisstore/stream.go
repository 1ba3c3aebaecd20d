package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Streamed results (idemstore.Streamer). A call's items live in a Redis
// list beside its record, at ItemsKey: the record key with '~' in place
// of the byte after the prefix, so it keeps the record's hash tag (one
// Cluster slot: one script reads and writes both) and can never be a
// record key or another call's items key. A list, not a Redis Stream:
// item seq is list index seq+1, so an offset read is one LRANGE and the
// re-send check one LINDEX, without entry IDs or field names to keep.
// Inside a script (measured on Redis 7, 40-byte items) an append costs
// about the same either way (3µs here, 2.5µs with XADD and explicit IDs,
// both far below the round trip), and reading 256 items from an offset
// is six times faster from a list (LRANGE, 32µs) than from a Stream
// (XRANGE, 200µs: each entry is an ID and a field array). Readers are
// woken by the store's pub/sub hub, as Wait's are, rather than by XREAD
// BLOCK, which would hold a pooled connection per waiting reader and
// need marker entries for changes of state.
//
// Index 0 of the list is a 32-byte header: the fence and owner of the run
// that wrote the items, and the bytes they count against the record's
// limit. The items belong to the record's current run only when the
// header's fence and owner are the record's: every claim that acquires
// or takes over writes a new fence (and a fresh claim a new owner), so
// from that claim on the old run's items are gone for every reader,
// atomically, without the claim touching a second key; the first append
// of the new run deletes them, and they expire no later than the record
// did. Every append and every write of the record (heartbeat, completion,
// failure) sets the list's expiry to the record's, so items are kept
// exactly as long as their record; a release by the lease that appended
// them deletes them (the next claim starts a new run); Delete removes
// both.
//
// The claim itself does not delete an old run's items, because it cannot
// do so safely in its one script. Declaring the items key (KEYS[2]) in
// every claim makes every claim a two-key script, which a Cluster refuses
// with TRYAGAIN while the slot migrates and the node does not hold both
// keys: for the whole migration for nearly every call, since most calls
// never stream and have no items key (the fenced writes failed that way
// until only a lease that appended named it, Store.streaming); and a
// two-key script has to leave the pipeline, as ordered claims do.
// Declaring it only for a record whose run streamed needs the claimer to
// know that, which only the appending process does (Store.streaming): the
// record would have to carry a flag (a new record format), and such a
// claim would still get TRYAGAIN between the two keys' MIGRATEs. Naming
// it only inside the script (a name built from KEYS[1]) is what Redis
// forbids: mid-migration a node refuses a key it no longer holds after
// the script has written the record, and servers that check declared
// keys refuse it always. Leaving the items costs little: the stamp hides
// them from every reader from the claim's commit on, the new run's first
// append deletes them, and they expire no later than the old run's record
// would have.
//
// An append publishes on the items channel (ItemsKey + ":new"); a change
// of state publishes on the record's channel as always, so a waiting
// ReadStream subscribes to both and re-reads on any note.

var _ idemstore.Streamer = (*Store)(nil)

// itemOverhead is what an item counts against the record's limit besides
// its data, as a step's length field does.
const itemOverhead = 4

// defaultReadMax is how many items a ReadStream returns when the request
// does not say.
const defaultReadMax = 256

// ItemsKey is the Redis key of the list that holds key's stream items.
func (s *Store) ItemsKey(key string) string {
	return s.prefix + "~" + s.RecordKey(key)[len(s.prefix):]
}

func itemsChannel(itemsKey string) string { return itemsKey + ":new" }

// appendSrc appends an item. KEYS[1] record, KEYS[2] items; ARGV[1]
// packed '>I8' fence, op id (8 bytes, zero unless WithReplicaAcks),
// owner (16 bytes) (stepScript's layout); ARGV[2] seq; ARGV[3] data; ARGV[4] the record limit; ARGV[5]
// the items channel. Returns {1} when the stream holds the item (written
// now, or a re-send of identical data), {-1, state, fence} when the
// caller does not own the key, {-2, size} when the record would be too
// large, {-3, count} for an item out of order or one recorded with other
// data, {0, reason} for a record it cannot read.
var appendSrc = luaCommon + `
local r, v = owned(KEYS[1], ARGV[1])
if not r then return v end
local stamp = string.sub(v, 4, 11) .. r.owner
local h = redis.pcall('LINDEX', KEYS[2], 0)
local n, bytes = 0, 0
if type(h) == 'string' and #h == 32 and string.sub(h, 1, 24) == stamp then
  n = redis.call('LLEN', KEYS[2]) - 1
  bytes = struct.unpack('>I8', h, 25)
elseif h then
  redis.call('DEL', KEYS[2]) -- another run's items
end
local seq, data, op = tonumber(ARGV[2]), ARGV[3], string.sub(ARGV[1], 9, 16)
-- with WithReplicaAcks, the record carries the op id that ackScript
-- looks for (SETRANGE keeps its expiry)
local function mark() if op ~= string.rep('\0', 8) then redis.call('SETRANGE', KEYS[1], 35, op) end end
if seq < n then
  if redis.call('LINDEX', KEYS[2], seq + 1) == data then mark(); return {1} end
  return {-3, n}
end
if seq > n then return {-3, n} end
bytes = bytes + ` + strconv.Itoa(itemOverhead) + ` + #data
local size = math.max(#v, 99) + bytes -- a fresh claim's 91 bytes become 99 at its first write
if size > tonumber(ARGV[4]) then return {-2, size} end
local hdr = stamp .. struct.pack('>I8', bytes)
if n == 0 then
  redis.call('RPUSH', KEYS[2], hdr, data)
else
  redis.call('RPUSH', KEYS[2], data)
  redis.call('LSET', KEYS[2], 0, hdr)
end
redis.call('PEXPIREAT', KEYS[2], redis.call('PEXPIRETIME', KEYS[1]))
mark()
redis.call('PUBLISH', ARGV[5], string.format('%d', n + 1))
return {1}
`

var appendScript = redis.NewScript(appendSrc)

// readStreamScript reads a record and its stream. KEYS[1] record,
// KEYS[2] items; ARGV[1] from, ARGV[2] max. Returns {now µs, value or
// false, PEXPIRETIME ms, count, items}, or {now, false, 0, 0, {}, error}
// when the record key holds something GET cannot read. count and items
// are the current run's (see the stamp above).
var readStreamScript = redis.NewScript(luaCommon + `
local now = now_us()
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' then return {now, false, 0, 0, {}, tostring(v.err)} end
if not v then return {now, false, 0, 0, {}} end
local at = redis.call('PEXPIRETIME', KEYS[1])
local h = redis.pcall('LINDEX', KEYS[2], 0)
if #v < 59 or type(h) ~= 'string' or #h ~= 32 or string.sub(h, 1, 24) ~= string.sub(v, 4, 11) .. string.sub(v, 44, 59) then
  return {now, v, at, 0, {}}
end
local n = redis.call('LLEN', KEYS[2]) - 1
local from = tonumber(ARGV[1])
if from >= n then return {now, v, at, n, {}} end
return {now, v, at, n, redis.call('LRANGE', KEYS[2], from + 1, math.min(n, from + tonumber(ARGV[2])))}
`)

// AppendItem implements idemstore.Streamer: one script, a compare-and-set
// on owner and fence like Complete, that appends the item to the run's
// list and wakes its readers. With WithReplicaAcks it returns once n
// replicas have the item, retried as a step is (a re-sent item is
// idempotent).
func (s *Store) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	const op = "append"
	if err := s.ready(ctx, op, l.Key); err != nil {
		return err
	}
	if n := headerLenV3 + itemOverhead + len(data); n > s.maxRecord {
		return s.itemTooLarge(seq, l.Key, int64(n))
	}
	rk, ik := s.RecordKey(l.Key), s.ItemsKey(l.Key)
	var arg [32]byte
	binary.BigEndian.PutUint64(arg[:], l.Fence)
	var opID []byte
	if s.acks.n > 0 {
		opID = s.op()
		copy(arg[8:16], opID)
	}
	copy(arg[16:], l.Owner[:])
	if data == nil {
		data = []byte{}
	}
	keys := []string{rk, ik}
	tooLarge := func(n int64) error { return s.itemTooLarge(seq, l.Key, n) }
	apply := func(ctx context.Context) error {
		res, code, err := s.runSized(ctx, op, l, s.scripts.appendItem, keys, tooLarge, arg[:], seq, data, s.maxRecord, itemsChannel(ik))
		switch {
		case err != nil || code == 1:
			return err
		case code == -3:
			n, _ := replyInt(res, 1)
			return fmt.Errorf("redisstore: append %s: %w", l.Key, idemstore.ItemOutOfPlace(seq, uint64(n)))
		}
		return s.badReply(op, l.Key, res, nil)
	}
	s.streaming.Store(streamLease{l.Key, l.Fence, l.Owner}, struct{}{})
	if err := apply(ctx); err != nil || s.acks.n == 0 {
		return err
	}
	return s.ackWrite(ctx, op, l, rk, opID, true, apply) // acks.go
}

// streamLease names one run's lease in Store.streaming.
type streamLease struct {
	key   string
	fence uint64
	owner idemstore.Token
}

// appended reports whether l appended stream items, so that its fenced
// writes also set their expiry.
func (s *Store) appended(l idemstore.Lease) bool {
	_, ok := s.streaming.Load(streamLease{l.Key, l.Fence, l.Owner})
	return ok
}

// forgetItems ends what Store.streaming holds for l: after a write that
// ended the lease, or found it lost.
func (s *Store) forgetItems(l idemstore.Lease) {
	s.streaming.Delete(streamLease{l.Key, l.Fence, l.Owner})
}

// dropItems deletes key's stream items after its record was deleted, as
// a command of its own (see Store.streaming). Items it misses are never
// read: they carry the fence and owner of a run no later record has, and
// they expire when their record would have.
func (s *Store) dropItems(ctx context.Context, key string) {
	_ = s.bounded(ctx, func() error { return s.rdb.Del(ctx, s.ItemsKey(key)).Err() })
}

// itemTooLarge is the error of an item that would make key's record n
// bytes.
func (s *Store) itemTooLarge(seq uint64, key string, n int64) error {
	return fmt.Errorf("redisstore: item %d of %s: %w: the record and its items would be %d bytes, the store holds %d at most", seq, key, idem.ErrResultTooLarge, n, s.maxRecord)
}

// ReadStream implements idemstore.Streamer. A waiting read subscribes to
// the record's channel (changes of state) and the items channel
// (appends) before it reads, and re-reads on any note, at the lease's
// expiry by the server's clock, and at least every poll interval.
func (s *Store) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	const op = "read stream"
	if err := s.ready(ctx, op, req.Key); err != nil {
		return idemstore.StreamBatch{}, err
	}
	if !req.Wait {
		b, _, err := s.readStream(ctx, req)
		return b, err
	}
	rk := s.RecordKey(req.Key)
	var ws []*waiter
	defer func() {
		for _, w := range ws {
			s.hub.unregister(ctx, w)
		}
	}()
	for _, ch := range []string{channelOf(rk), itemsChannel(s.ItemsKey(req.Key))} {
		w, err := s.hub.register(ctx, ch)
		if err != nil {
			return idemstore.StreamBatch{}, fmt.Errorf("redisstore: %s %s: %w: %w", op, req.Key, idem.ErrStoreUnavailable, err)
		}
		ws = append(ws, w)
	}
	timer := time.NewTimer(s.poll)
	defer timer.Stop()
	for _, w := range ws { // as Wait: read once the subscriptions are live
		select {
		case <-w.sub.ready:
		case <-timer.C:
		case <-ctx.Done():
			return idemstore.StreamBatch{}, fmt.Errorf("redisstore: %s %s: %w", op, req.Key, ctx.Err())
		}
	}
	return s.waitStream(ctx, req, ws, timer)
}

// waitStream is ReadStream's loop for a reader that waits, subscribed
// through ws.
func (s *Store) waitStream(ctx context.Context, req idemstore.StreamRead, ws []*waiter, timer *time.Timer) (idemstore.StreamBatch, error) {
	const op = "read stream"
	for {
		b, now, err := s.readStream(ctx, req)
		if err != nil || !req.Idle(b) {
			return b, err
		}
		if s.hub.isClosed() {
			return idemstore.StreamBatch{}, fmt.Errorf("redisstore: %s %s: %w: %w", op, req.Key, idem.ErrStoreUnavailable, errClosed)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(min(s.poll, b.LeaseUntil.Sub(now)+time.Millisecond))
		select {
		case <-ctx.Done():
			return idemstore.StreamBatch{}, fmt.Errorf("redisstore: %s %s: %w", op, req.Key, ctx.Err())
		case <-timer.C:
		case <-ws[0].notes:
		case <-ws[1].notes:
		}
	}
}

// readStream reads req's batch once, with the server's time.
func (s *Store) readStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, time.Time, error) {
	const op = "read stream"
	max := req.Max
	if max <= 0 {
		max = defaultReadMax
	}
	var res []any
	err := s.untilSlotSettled(ctx, func() error {
		return s.bounded(ctx, func() (err error) {
			keys := []string{s.RecordKey(req.Key), s.ItemsKey(req.Key)}
			res, err = s.scripts.readStream.Run(ctx, s.rdb, keys, req.From, max).Slice()
			return err
		})
	})
	if err != nil {
		return idemstore.StreamBatch{}, time.Time{}, s.wrap(ctx, op, req.Key, err)
	}
	us, err := replyInt(res, 0)
	if err != nil || len(res) < 5 {
		return idemstore.StreamBatch{}, time.Time{}, s.badReply(op, req.Key, res, err)
	}
	now := micros(uint64(us))
	if len(res) > 5 {
		return idemstore.StreamBatch{}, now, corrupt(req.Key, "cannot read the record key: "+replyString(res, 5))
	}
	v, ok := res[1].(string)
	if !ok {
		return idemstore.StreamBatch{}, now, nil
	}
	at, _ := replyInt(res, 2)
	r, err := decodeRecord(req.Key, v, at)
	if err != nil {
		return idemstore.StreamBatch{}, now, err
	}
	if !now.Before(r.ExpiresAt) {
		return idemstore.StreamBatch{}, now, nil
	}
	return streamBatch(r, now, res), now, nil
}

// streamBatch is the batch of record r read at now with readStream's
// reply res.
func streamBatch(r idemstore.Record, now time.Time, res []any) idemstore.StreamBatch {
	n, _ := replyInt(res, 3)
	b := idemstore.NewStreamBatch(r.State, r.Fence, r.LeaseUntil, now, r.Result)
	b.Count = uint64(n)
	if b.Result == nil && (r.State == idemstore.StateCompleted || r.State == idemstore.StateFailed) {
		b.Result = []byte{}
	}
	items, _ := res[4].([]any)
	for _, it := range items {
		str, _ := it.(string)
		b.Items = append(b.Items, []byte(str))
	}
	return b
}
