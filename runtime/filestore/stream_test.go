package filestore

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idemstore"
)

// An item torn by a crash mid-append (or one being appended while a
// reader reads) is not an item: readers stop before it, and the next
// append cuts it off. Bytes of another run never count either.
func TestItemsTornTail(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, WithoutSync())
	l := idemstore.Lease{Key: "k", Owner: idemstore.Token{1}, Duration: time.Minute, TTL: time.Hour}
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
	if err != nil {
		t.Fatal(err)
	}
	l.Fence = res.Fence
	for i, it := range []string{"a", "b"} {
		if err := s.AppendItem(ctx, l, uint64(i), []byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	p := s.paths(l.Key)
	items := func() []string {
		t.Helper()
		b, err := s.ReadStream(ctx, idemstore.StreamRead{Key: l.Key})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range b.Items {
			out = append(out, string(it))
		}
		return out
	}
	for _, torn := range [][]byte{
		{0, 0, 0, 5, 'c'},                          // the length and part of the data
		appendItem(nil, l.Fence, 3, []byte("c")),   // a whole item, at the wrong position
		appendItem(nil, l.Fence+1, 2, []byte("c")), // a whole item, of another run
	} {
		f, err := os.OpenFile(p.items, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(torn); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if diff := cmp.Diff([]string{"a", "b"}, items()); diff != "" {
			t.Fatalf("items with %q appended (-want +got):\n%s", torn, diff)
		}
	}
	if err := s.AppendItem(ctx, l, 2, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, items()); diff != "" {
		t.Fatalf("items after the next append (-want +got):\n%s", diff)
	}
}

// A run's items file is read only for its own record: a file an earlier
// run left (its last run recorded no item) is not the stream of a later
// record, and reading it neither errs nor loops.
func TestItemsOfAnEarlierRun(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, WithoutSync())
	claim := func() idemstore.Lease {
		t.Helper()
		l := idemstore.Lease{Key: "k", Owner: idemstore.Token{byte(time.Now().UnixNano())}, Duration: time.Nanosecond, TTL: time.Hour}
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: l.Key, Owner: l.Owner, Lease: l.Duration, TTL: l.TTL})
		if err != nil {
			t.Fatal(err)
		}
		l.Fence = res.Fence
		return l
	}
	l := claim()
	if err := s.AppendItem(ctx, l, 0, []byte("old")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond) // past the lease: the next claim takes over
	l2 := claim()
	if err := s.Complete(ctx, l2, idemstore.Result{Data: []byte("end")}); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := s.ReadStream(rctx, idemstore.StreamRead{Key: l.Key, Wait: true})
	if err != nil || b.State != idemstore.StateCompleted || b.Fence != l2.Fence || b.Count != 0 {
		t.Fatalf("ReadStream = %+v, %v; want the completed run under fence %d, without items", b, err, l2.Fence)
	}
}
