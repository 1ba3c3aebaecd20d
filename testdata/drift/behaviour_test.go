package drift

import (
	"context"
	"testing"

	"github.com/idemgen/idemgen/testdata/drift/ext"
)

func TestEveryFieldKeyed(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	req := Req{Base: Base{Tenant: "t"}, ID: "1", Count: 2, Opts: ext.Options{Region: "eu", Retries: 3}, Note: "a"}
	api.Charge(ctx, req)
	same := req
	same.Note = "b" // idem:"-"
	api.Charge(ctx, same)
	if n := runs.Load(); n != 1 {
		t.Fatalf("same request ran %d times", n)
	}
	mods := []func(*Req){
		func(r *Req) { r.Tenant = "u" },
		func(r *Req) { r.ID = "2" },
		func(r *Req) { r.Count = 3 },
		func(r *Req) { r.Opts.Region = "us" },
		func(r *Req) { r.Opts.Retries = 0 },
	}
	for i, m := range mods {
		r := req
		m(&r)
		api.Charge(ctx, r)
		if n := runs.Load(); n != int64(i+2) {
			t.Fatalf("modification %d did not change the key", i)
		}
	}
}
