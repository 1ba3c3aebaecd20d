package aliasunexported

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/testdata/aliasunexported/blob"
	"github.com/idemgen/idemgen/testdata/aliasunexported/blob/blockblob"
)

// The wrappers name only the aliases; a replay gives back the value of the
// unexported type behind them, through the stored bytes.
func TestAliasesOfUnexportedTypes(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t)
	c := NewIdempotentClient(blob.NewClient("c"), g)
	first, err := c.UploadBuffer(ctx, "box", []byte("ab"), &blob.UploadBufferOptions{BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	replay, err := c.UploadBuffer(ctx, "box", []byte("ab"), &blob.UploadBufferOptions{BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, replay); diff != "" || first.ETag == nil {
		t.Errorf("replay (-first +replay):\n%s", diff)
	}
	pages, err := NewIdempotentBlockClient(blockblob.NewClient("b"), g).List(ctx, "p")
	if err != nil || len(pages.Items) != 1 {
		t.Fatalf("List: %v %v", pages, err)
	}
	rs, r, err := NewIdempotent(g).Store(ctx, nil, Receipt{ID: "r1"}, []blockblob.Page[int64]{{Items: []int64{1}}})
	if err != nil || r.ID != "r1" || rs != nil {
		t.Fatalf("Store: %v %v %v", rs, r, err)
	}
}
