package adapter

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/internal/impl"
	"github.com/idemgen/idemgen/runtime/memstore"
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

// TestConfigure: a constructor without a Guard fails before its options
// apply; with one, its options apply and check's error names the package.
func TestConfigure(t *testing.T) {
	type config struct{ n int }
	type option func(*config)
	set := func(n int) option { return func(c *config) { c.n = n } }
	check := func(c *config) error {
		if c.n < 0 {
			return errors.New("negative")
		}
		return nil
	}
	g := idem.NewGuard(memstore.New())
	for _, tc := range []struct {
		name    string
		g       *idem.Guard
		opts    []option
		want    int
		wantErr string
	}{
		{"no Guard", nil, []option{set(2)}, 1, "pkg: New: nil Guard"},
		{"default", g, nil, 1, ""},
		{"applied", g, []option{set(2)}, 2, ""},
		{"refused", g, []option{set(-1)}, -1, "pkg: negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Configure("pkg", "New", tc.g, config{n: 1}, tc.opts, check)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got.n != tc.want || gotErr != tc.wantErr {
				t.Errorf("Configure = %d, %q; want %d, %q", got.n, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}

// TestSpec: the options apply over the name, a failure releases the key,
// and an option's error names the package.
func TestSpec(t *testing.T) {
	spec, err := Spec("pkg", "name", []idemcall.Option{idemcall.WithTTL(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "name" || spec.TTL != time.Minute || spec.OnFailure != idem.FailureUnlock {
		t.Errorf("Spec = %+v; want name, a minute's TTL, FailureUnlock", spec)
	}
	_, err = Spec("pkg", "name", []idemcall.Option{idemcall.WithName("")})
	if err == nil || !strings.HasPrefix(err.Error(), "pkg: ") {
		t.Errorf("Spec with an empty name: %v; want an error prefixed pkg: ", err)
	}
}
