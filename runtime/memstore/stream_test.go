package memstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// A record of 1200 bytes at most: 256 of overhead, the key "big", and 24
// a stream item besides its data.
func TestMemoryStoreItemsCountAgainstMaxBytes(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.WithMaxBytes(1200))
	l := idemtest.CheckItemTooLarge(t, s, "big", idemstore.Token{1}, "1307 bytes")
	before := s.Bytes()
	if err := s.Complete(ctx, l, idemstore.Result{Data: make([]byte, 500)}); !errors.Is(err, idem.ErrResultTooLarge) {
		t.Fatalf("Complete with a result that does not fit beside the items = %v, want ErrResultTooLarge", err)
	}
	if err := s.Complete(ctx, l, idemstore.Result{Data: make([]byte, 10)}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.Bytes(), before+10; got != want {
		t.Errorf("Bytes after completing the stream = %d, want %d (the items stay counted)", got, want)
	}
	if err := s.Delete(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if got := s.Bytes(); got != 0 {
		t.Errorf("Bytes after Delete = %d, want 0", got)
	}
}
