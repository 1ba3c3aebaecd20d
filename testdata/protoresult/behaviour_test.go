package protoresult

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestProtoReplayed(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	e1, ts1, err := api.Record(ctx, "ev1")
	if err != nil {
		t.Fatal(err)
	}
	e2, ts2, err := api.Record(ctx, "ev1")
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	if diff := cmp.Diff(e1, e2, protocmp.Transform()); diff != "" {
		t.Errorf("event replay differs (-first +replay):\n%s", diff)
	}
	if diff := cmp.Diff(ts1, ts2, protocmp.Transform()); diff != "" {
		t.Errorf("timestamp replay differs (-first +replay):\n%s", diff)
	}
	if e2.None != nil || e2.Attrs == e1.Attrs {
		t.Errorf("want a nil None and a fresh Attrs")
	}
}
