package adapter

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// TestWriteBody: a body up to InlineBody bytes is written as is, a longer
// one as its SHA-256, each behind its flag, so the two forms never
// collide.
func TestWriteBody(t *testing.T) {
	long := bytes.Repeat([]byte("x"), InlineBody+1)
	digest := sha256.Sum256(long)
	for _, tc := range []struct {
		name    string
		body    []byte
		flag    bool
		written []byte
	}{
		{"empty", nil, false, nil},
		{"at the limit", long[:InlineBody], false, long[:InlineBody]},
		{"past the limit", long, true, digest[:]},
		{"a digest's bytes as a body", digest[:], false, digest[:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got, want impl.KeyBuilder
			WriteBody(&got, tc.body)
			want.Bool(tc.flag)
			want.Bytes(tc.written)
			if got.Sum() != want.Sum() {
				t.Errorf("WriteBody(%d bytes) is not flag %v then %d bytes", len(tc.body), tc.flag, len(tc.written))
			}
		})
	}
	var asDigest, asBody impl.KeyBuilder
	WriteBody(&asDigest, long)
	WriteBody(&asBody, digest[:])
	if asDigest.Sum() == asBody.Sum() {
		t.Error("a long body and its digest sent as a body fingerprint alike")
	}
}

// TestPrincipal: no function names no principal; a function's failure,
// or its empty answer, is an error.
func TestPrincipal(t *testing.T) {
	type fn func(string) (string, error)
	for _, tc := range []struct {
		name    string
		fn      fn
		want    string
		wantErr string
	}{
		{"no function", nil, "", ""},
		{"named", func(r string) (string, error) { return "client-" + r, nil }, "client-a", ""},
		{"empty", func(string) (string, error) { return "", nil }, "", "empty principal"},
		{"failed", func(string) (string, error) { return "", errors.New("no token") }, "", "no token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Principal(tc.fn, "a")
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || gotErr != tc.wantErr {
				t.Errorf("Principal = %q, %q; want %q, %q", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}
