package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// FuzzDecodeRecord feeds arbitrary values to the record decoder, which reads
// whatever sits at a record key (possibly another application's data).
// Properties: it never panics; a rejection wraps idem.ErrCorruptRecord (so
// a stranger's value is never taken for an absent key); an accepted record
// has a known state, and encoding it and decoding again gives the same
// record.
//
// Seed corpus: testdata/fuzz/FuzzDecodeRecord. Run with
//
//	go test -run '^$' -fuzz '^FuzzDecodeRecord$' -fuzztime 5m -parallel 1 ./runtime/redisstore
func FuzzDecodeRecord(f *testing.F) {
	t0 := time.UnixMicro(1_700_000_000_123_456)
	for _, r := range []idemstore.Record{
		{State: idemstore.StateInProgress, Fence: 1, Owner: idemstore.Token{1, 2}, Fingerprint: idemstore.Fingerprint{3}, LeaseUntil: t0, ExpiresAt: t0.Add(time.Hour), UpdatedAt: t0, ClaimedAt: t0},
		{State: idemstore.StateCompleted, Fence: 7, Result: []byte(`{"ok":true}`), LeaseUntil: t0, ExpiresAt: t0.Add(24 * time.Hour), UpdatedAt: t0},
		{State: idemstore.StateFailed, Fence: 1 << 40, Result: []byte(`{"message":"boom"}`), ExpiresAt: t0},
		{State: idemstore.StateReleased, Fence: 3, ExpiresAt: t0},
	} {
		f.Add(encodeRecord(r, 42))
		f.Add(encodeRecordV1(r, 42))
	}
	fresh, _ := encodeFresh(idemstore.Token{4}, idemstore.Fingerprint{5}, []byte("op-id-08"), time.Second, time.Hour)
	f.Add(fresh)
	f.Add([]byte{})
	f.Add([]byte("plain string value of another application"))
	f.Add(append([]byte{recordMagic, recordVersion + 1}, make([]byte, headerLen)...))
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := decodeRecord("k", string(v), t0.UnixMilli())
		if err != nil {
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("rejection does not wrap ErrCorruptRecord: %v", err)
			}
			return
		}
		if r.State < idemstore.StateInProgress || r.State > idemstore.StateReleased {
			t.Fatalf("accepted unknown state %d", r.State)
		}
		if r.Key != "k" {
			t.Fatalf("key %q, want k", r.Key)
		}
		op := uint64(be64(string(v), offOp))
		again, err := decodeRecord("k", string(encodeRecord(r, op)), t0.UnixMilli())
		if err != nil {
			t.Fatalf("re-encoded record rejected: %v", err)
		}
		if diff := cmp.Diff(r, again); diff != "" {
			t.Fatalf("decode(encode(r)) != r (-first +second):\n%s", diff)
		}
	})
}
