package cloudoutput

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/idemgen/idemgen/testdata/cloudoutput/sdk"
)

func TestPutOutputReplayed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := runs.Load()
			first, err := api.Put(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Put(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if n := runs.Load() - before; n != 1 {
				t.Fatalf("ran %d times", n)
			}
			// ResultMetadata holds no exported state: a replay has its zero value.
			want := *first
			want.ResultMetadata = sdk.Metadata{}
			if diff := cmp.Diff(&want, replay, cmpopts.IgnoreUnexported(sdk.PutObjectOutput{}, sdk.Metadata{})); diff != "" {
				t.Errorf("replay differs (-want +replay):\n%s", diff)
			}
			if replay.VersionId != nil || replay.Checksums == nil || replay.ResultMetadata.Get("request-id") != nil {
				t.Errorf("replay %+v: want nil VersionId, empty Checksums, no metadata", replay)
			}
		})
	}
}
