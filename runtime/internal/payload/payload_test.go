package payload

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// TestBody: a body up to Inline bytes is written as is, a longer one as
// its SHA-256, each behind its flag, so the two forms never collide.
func TestBody(t *testing.T) {
	long := bytes.Repeat([]byte("x"), Inline+1)
	digest := sha256.Sum256(long)
	for _, tc := range []struct {
		name    string
		body    []byte
		flag    bool
		written []byte
	}{
		{"empty", nil, false, nil},
		{"at the limit", long[:Inline], false, long[:Inline]},
		{"past the limit", long, true, digest[:]},
		{"a digest's bytes as a body", digest[:], false, digest[:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want impl.KeyBuilder
			Body(&got, tc.body)
			want.Bool(tc.flag)
			want.Bytes(tc.written)
			if got.Sum() != want.Sum() {
				t.Errorf("Body(%d bytes) is not flag %v then %d bytes", len(tc.body), tc.flag, len(tc.written))
			}
		})
	}
	var asDigest, asBody impl.KeyBuilder
	Body(&asDigest, long)
	Body(&asBody, digest[:])
	if asDigest.Sum() == asBody.Sum() {
		t.Error("a long body and its digest sent as a body fingerprint alike")
	}
}
