package anyvalues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/idemgen/idemgen/runtime/idem"
)

// Arguments of different dynamic types are different calls, equal ones
// the same call, and a replay returns the first call's value with its
// dynamic type.
func TestAnyArgumentsKeyByDynamicType(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			q := "select " + t.Name()
			args := []any{int64(1), float64(1), "1", json.Number("1"), int32(1), nil, []byte("1"), map[string]any{"a": 1.0}}
			before := runs.Load()
			for round := range 2 {
				for _, a := range args {
					got, err := api.Exec(ctx, q, a)
					if err != nil {
						t.Fatalf("round %d, %T: %v", round, a, err)
					}
					if diff := cmp.Diff(a, got); diff != "" || fmt.Sprintf("%T", got) != fmt.Sprintf("%T", a) {
						t.Errorf("round %d: Exec(%#v) returned %#v (%T)", round, a, got, got)
					}
				}
			}
			if n := runs.Load() - before; n != int64(len(args)) {
				t.Errorf("ran %d times for %d distinct arguments (each called twice)", n, len(args))
			}
		})
	}
}

// A replay of a decoded JSON document is the document, every number a
// float64, nil and empty kept apart.
func TestAnyDocumentReplay(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			var doc map[string]any
			if err := json.Unmarshal([]byte(`{"v": 2.5, "name": "x", "list": [1, "a", null, {"b": true}], "empty": {}, "none": null}`), &doc); err != nil {
				t.Fatal(err)
			}
			e := Event{ID: t.Name(), Data: doc, Tags: []any{"t", 3.0, []any{}}}
			before := runs.Load()
			first, err := api.Record(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.Record(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if n := runs.Load() - before; n != 1 {
				t.Errorf("ran %d times, want 1", n)
			}
			e.Data = map[string]any{"v": 2.5, "name": "y"}
			if _, err := api.Record(ctx, e); err != nil {
				t.Fatal(err)
			}
			if n := runs.Load() - before; n != 2 {
				t.Errorf("another document: ran %d times in all, want 2", n)
			}
		})
	}
}

type status string

// A dynamic type that cannot be keyed fails the call before it runs; one
// that can be keyed but not restored is recorded as not encodable, and a
// duplicate gets that failure without running.
func TestAnyOutsideTheTypesThatKeyAndStore(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			q := "select " + t.Name()
			before := runs.Load()
			x := 1
			if _, err := api.Exec(ctx, q, &x); !errors.Is(err, idem.ErrInvalidKey) {
				t.Errorf("Exec(&x): %v, want ErrInvalidKey", err)
			}
			if n := runs.Load() - before; n != 0 {
				t.Errorf("an unkeyable argument ran the function %d times", n)
			}
			got, err := api.Exec(ctx, q, status("open"))
			if !errors.Is(err, idem.ErrResultNotEncodable) || got != status("open") {
				t.Errorf("first Exec(status): %#v, %v; want its value and ErrResultNotEncodable", got, err)
			}
			if _, err := api.Exec(ctx, q, status("open")); !errors.Is(err, idem.ErrResultNotEncodable) {
				t.Errorf("duplicate Exec(status): %v, want the recorded ErrResultNotEncodable", err)
			}
			if n := runs.Load() - before; n != 1 {
				t.Errorf("ran %d times, want 1", n)
			}
		})
	}
}

// An address is one call per network and string form: TCP and UDP on one
// port differ, two values of one address are the same call.
func TestAddrKey(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			port := 1000 + len(t.Name())
			ip := net.IPv4(192, 0, 2, 1)
			before := runs.Load()
			for _, a := range []net.Addr{
				&net.TCPAddr{IP: ip, Port: port}, &net.UDPAddr{IP: ip, Port: port}, nil,
				&net.TCPAddr{IP: ip.To4(), Port: port}, &net.UDPAddr{IP: ip, Port: port}, nil,
			} {
				if _, err := api.Connect(ctx, a); err != nil {
					t.Fatal(err)
				}
			}
			if n := runs.Load() - before; n != 3 {
				t.Errorf("ran %d times for three addresses, want 3", n)
			}
		})
	}
}
