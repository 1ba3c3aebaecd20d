package pgstore

import (
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// FuzzRowCheck feeds arbitrary column values to the row validator, the part
// of the Postgres store that decides whether a row read back (by Claim, Get
// and the wait check) can be interpreted. Properties: it never panics; a
// rejection wraps idem.ErrCorruptRecord (a row is never taken for an absent
// key); an accepted row has a known state, a token-sized owner, a
// fingerprint-sized fingerprint, a positive fence, an expiry, and a result
// when finished.
//
// Seed corpus: testdata/fuzz/FuzzRowCheck. Run with
//
//	go test -run '^$' -fuzz '^FuzzRowCheck$' -fuzztime 5m -parallel 1 ./runtime/pgstore
func FuzzRowCheck(f *testing.F) {
	tok, fp := make([]byte, len(idemstore.Token{})), make([]byte, len(idemstore.Fingerprint{}))
	f.Add(int16(stInProgress), int16(rowFormat), tok, fp, []byte(nil), int64(1), int64(1_700_000_000_000_000))
	f.Add(int16(stCompleted), int16(rowFormat), tok, fp, []byte(`{"ok":1}`), int64(9), int64(1_700_000_000_000_000))
	f.Add(int16(stFailed), int16(rowFormat), tok, fp, []byte(nil), int64(2), int64(1))
	f.Add(int16(stReleased), int16(rowFormat+1), tok, fp, []byte(nil), int64(3), int64(0))
	f.Add(int16(0), int16(0), []byte{1}, []byte{}, []byte{}, int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, state, format int16, owner, fingerprint, result []byte, fence, expiresUS int64) {
		r := row{state: state, format: format, owner: owner, fp: fingerprint, result: result, fence: fence}
		if expiresUS != 0 {
			r.expiresAt = time.UnixMicro(expiresUS)
			r.leaseUntil = r.expiresAt.Add(-time.Second)
		}
		err := r.check("k")
		if err != nil {
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("rejection does not wrap ErrCorruptRecord: %v", err)
			}
			return
		}
		switch {
		case r.state < stInProgress || r.state > stReleased:
			t.Fatalf("accepted state %d", r.state)
		case len(r.owner) != len(idemstore.Token{}) || len(r.fp) != len(idemstore.Fingerprint{}):
			t.Fatalf("accepted owner of %d bytes, fingerprint of %d", len(r.owner), len(r.fp))
		case r.fence < 1:
			t.Fatalf("accepted fence %d", r.fence)
		case r.format < 1 || r.format > rowFormat:
			t.Fatalf("accepted format %d", r.format)
		case (r.state == stCompleted || r.state == stFailed) && r.result == nil:
			t.Fatalf("accepted a finished row without a result")
		case r.expiresAt.IsZero():
			t.Fatalf("accepted a row without expiry")
		}
	})
}
