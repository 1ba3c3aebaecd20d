package keycloudsdk

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/testdata/keycloudsdk/sdk"
)

func str(s string) *string { return &s }

func input() *sdk.PutObjectInput {
	n := int64(3)
	return &sdk.PutObjectInput{Bucket: str("b"), Key: str("k"), Body: []byte("abc"),
		Metadata: map[string]string{"a": "1", "b": "2"}, Tags: []sdk.Tag{{Key: str("t"), Value: str("v")}},
		Mode: "GOVERNANCE", Size: &n}
}

func TestCloudInput(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	// The same input (a fresh value, equal exported fields): one run.
	first, _ := api.Put(ctx, input())
	again, _ := api.Put(ctx, input())
	if first != 1 || again != 1 || runs.Load() != 1 {
		t.Fatalf("same input ran %d times", runs.Load())
	}
	// Each exported field is part of the key.
	mods := []func(*sdk.PutObjectInput){
		func(in *sdk.PutObjectInput) { in.Bucket = str("other") },
		func(in *sdk.PutObjectInput) { in.Key = nil },
		func(in *sdk.PutObjectInput) { in.Body = []byte{} },
		func(in *sdk.PutObjectInput) { in.Metadata["a"] = "9" },
		func(in *sdk.PutObjectInput) { in.Tags[0].Value = str("w") },
		func(in *sdk.PutObjectInput) { in.Mode = "COMPLIANCE" },
		func(in *sdk.PutObjectInput) { in.Size = nil },
	}
	for i, m := range mods {
		in := input()
		m(in)
		if _, err := api.Put(ctx, in); err != nil {
			t.Fatal(err)
		}
		if n := runs.Load(); n != int64(i+2) {
			t.Fatalf("modification %d did not change the key", i)
		}
	}
	if _, err := api.Put(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != int64(len(mods)+2) {
		t.Fatalf("a nil input shares a key with another (ran %d times)", n)
	}
}

func TestLocalMarkers(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	runs.Store(0)
	api.PutFor(ctx, Upload{Owner: "o", In: input()})
	api.PutFor(ctx, Upload{Owner: "o", In: input()})
	if n := runs.Load(); n != 1 {
		t.Fatalf("same upload ran %d times", n)
	}
	api.PutFor(ctx, Upload{Owner: "p", In: input()})
	api.PutFor(ctx, Upload{Owner: "o"})
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times, want 3", n)
	}
}
