package firestorestore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// corrupt overwrites key's document with a foreign one.
func corrupt(t *testing.T, s idemstore.Store, key string) {
	t.Helper()
	fs := s.(*firestorestore.Store)
	var found bool
	err := fs.List(context.Background(), key, func(r idemstore.Record) error {
		found = found || r.Key == key
		return nil
	})
	if err != nil || !found {
		t.Fatalf("no record for %q to damage (%v)", key, err)
	}
	it := fs.Collection().Documents(context.Background())
	defer it.Stop()
	docs, err := it.GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if _, err := d.Ref.Set(context.Background(), map[string]any{"owner": "someone else", "lock": true}); err != nil {
			t.Fatal(err)
		}
	}
}

// The suite on Firestore's clock (the store reads no other for leases), so
// it sleeps through leases: a lease of 1s (TTL 4s) leaves room for the
// emulator's round trips on a loaded machine (with 500ms, fifty
// concurrent claims and completions sometimes outlived their 2s TTL
// before the suite read them back).
func TestConformance(t *testing.T) {
	c := emulator(t)
	for _, tc := range []struct {
		name string
		opts []firestorestore.Option
	}{
		{"ReadFirst", nil},
		{"CreateFirst", []firestorestore.Option{firestorestore.WithCreateFirst()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			idemtest.RunStoreSuite(t, idemtest.Harness{
				New: func(t *testing.T, now func() time.Time) idemstore.Store {
					return newStore(t, c, tc.opts...)
				},
				Lease:   time.Second,
				Corrupt: corrupt,
				Raw:     raw,
			})
		})
	}
}

// raw reads every document of the store's collection, every field's bytes
// or text, as a reader of the database (or its exports) would.
func raw(t *testing.T, s idemstore.Store) [][]byte {
	var out [][]byte
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case []byte:
			out = append(out, v)
		case string:
			out = append(out, []byte(v))
		case map[string]any:
			for k, e := range v {
				out = append(out, []byte(k))
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		default:
			out = append(out, []byte(fmt.Sprint(v)))
		}
	}
	docs, err := s.(*firestorestore.Store).Collection().Documents(context.Background()).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		out = append(out, []byte(d.Ref.ID))
		walk(d.Data())
	}
	return out
}
