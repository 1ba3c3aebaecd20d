package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// TestInvalidKeys: a key Postgres can never hold is idem.ErrInvalidKey,
// not a server error that a fail-open Guard would treat as an outage.
func TestInvalidKeys(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	b := make([]byte, 8<<10)
	_, _ = rand.Read(b)
	cases := []struct {
		name, key string
	}{
		{"PastBTreeLimit", "k:" + hex.EncodeToString(b)},
		{"NUL", "k:a\x00b"},
		{"InvalidUTF8", "k:\xff\xfe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := idemstore.ClaimRequest{Key: tc.key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour}
			_, err := s.Claim(context.Background(), req)
			if !errors.Is(err, idem.ErrInvalidKey) || errors.Is(err, idem.ErrStoreUnavailable) {
				t.Errorf("Claim: %v, want ErrInvalidKey (and not ErrStoreUnavailable)", err)
			}
		})
	}
}
