package memstore

import (
	"context"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// itemOverhead is what Bytes counts for a stream item besides its data:
// its slice header in the record's item list.
const itemOverhead = 24

// defaultReadMax is how many items a ReadStream returns when the request
// does not say.
const defaultReadMax = 256

// itemLog is a record's stream: its items, and what they count against
// WithMaxBytes.
type itemLog struct {
	items [][]byte
	bytes int64
}

// dropItems forgets r's stream (a new run, a release). Caller holds r's
// shard lock and resizes r.
func (r *memRecord) dropItems() { r.stream = nil }

// streamBytes is what r's items count against WithMaxBytes.
func (r *memRecord) streamBytes() int64 {
	if r.stream == nil {
		return 0
	}
	return r.stream.bytes
}

// itemsOf is r's items.
func itemsOf(r *memRecord) [][]byte {
	if r.stream == nil {
		return nil
	}
	return r.stream.items
}

// AppendItem records item seq of the stream of the call l owns (see
// idemstore.Streamer). The store keeps data as given, as it keeps a
// result: one copy of an item, not two.
func (s *Store) AppendItem(ctx context.Context, l idemstore.Lease, seq uint64, data []byte) error {
	sh, r, err := s.lockOwned(ctx, l)
	if err != nil {
		return err
	}
	defer sh.mu.Unlock()
	if resent, err := idemstore.CheckAppend(itemsOf(r), seq, data); resent || err != nil {
		if err != nil {
			return fmt.Errorf("memstore: %s: %w", l.Key, err)
		}
		return nil
	}
	size := int64(itemOverhead + len(data))
	if n := r.size + size; n > s.maxBytes {
		return fmt.Errorf("%w: item %d makes the record %d bytes, the store holds %d in all", idem.ErrResultTooLarge, seq, n, s.maxBytes)
	}
	if r.stream == nil {
		r.stream = new(itemLog)
	}
	r.stream.items = append(r.stream.items, data)
	r.stream.bytes += size
	s.resize(r)
	s.wakeAll(r) // attached readers
	return nil
}

// ReadStream implements idemstore.Streamer. Appends and every change of
// state wake a waiting reader through the record's wake channel (the one
// Wait uses); lease expiry is noticed by polling.
func (s *Store) ReadStream(ctx context.Context, req idemstore.StreamRead) (idemstore.StreamBatch, error) {
	for {
		if err := ctx.Err(); err != nil {
			return idemstore.StreamBatch{}, err
		}
		sh := s.shard(req.Key)
		sh.mu.Lock()
		b, wake := s.readLocked(sh, &req)
		sh.mu.Unlock()
		if wake == nil {
			return b, nil
		}
		if err := s.pause(ctx, wake); err != nil {
			return idemstore.StreamBatch{}, err
		}
	}
}

// readLocked is ReadStream's read under the shard lock: the batch, or,
// for a reader that waits and has nothing new, the channel to wait on.
func (s *Store) readLocked(sh *memShard, req *idemstore.StreamRead) (idemstore.StreamBatch, chan struct{}) {
	now := s.clock()
	r := sh.m[req.Key]
	if r == nil || r.State == idemstore.StateAbsent || !live(r, now) {
		return idemstore.StreamBatch{}, nil
	}
	items := itemsOf(r)
	b := idemstore.NewStreamBatch(r.State, r.Fence, s.time(r.LeaseUntil), s.time(now), r.Result)
	b.Count = uint64(len(items))
	if req.From < b.Count {
		end := b.Count
		if m := req.Max; m <= 0 {
			end = min(end, req.From+defaultReadMax)
		} else {
			end = min(end, req.From+uint64(m))
		}
		// Capped: the reader cannot append into the record's list.
		b.Items = items[req.From:end:end]
		return b, nil
	}
	if !req.Idle(b) {
		return b, nil
	}
	if r.wake == nil {
		r.wake = make(chan struct{})
	}
	return b, r.wake
}
