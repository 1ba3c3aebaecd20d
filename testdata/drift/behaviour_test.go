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
		func(r *Req) { r.Amount = 7 },
		func(r *Req) { r.Code = "x" },
		func(r *Req) { r.Codes = []int32{1} },
		func(r *Req) { r.Units = 4 },
		func(r *Req) { r.Level = 5 },
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

func TestQuoteReplays(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	first, err := api.Quote(ctx, 1050, 2)
	if err != nil {
		t.Fatal(err)
	}
	again, err := api.Quote(ctx, 1050, 2)
	if err != nil || again != first || first != (Price{Total: 2100, Rate: 1.25}) {
		t.Fatalf("replay %+v, %v; first %+v", again, err, first)
	}
}
