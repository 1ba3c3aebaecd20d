package protoresult

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestProtoReplayed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) { protoReplayed(t, NewIdempotent(ng.g)) })
	}
}

func protoReplayed(t *testing.T, api *Idempotent) {
	ctx := context.Background()
	before := runs.Load()
	e1, ts1, err := api.Record(ctx, "ev1")
	if err != nil {
		t.Fatal(err)
	}
	e2, ts2, err := api.Record(ctx, "ev1")
	if err != nil {
		t.Fatal(err)
	}
	if n := runs.Load() - before; n != 1 {
		t.Fatalf("ran %d times", n)
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
