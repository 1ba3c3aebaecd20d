package generator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestShapeSkeletonGeneric: a generic function's skeleton counts its type
// parameters and writes their uses by index, so Map[K, V] and Map[V, K]
// (or a type parameter and a concrete type) differ.
func TestShapeSkeletonGeneric(t *testing.T) {
	const src = `package p

import "context"

type Page[T any] struct{ Items []T }

func Plain(ctx context.Context, s string) error { return nil }
func One[E any](ctx context.Context, e E) error { return nil }
func Two[K comparable, V any](m map[K]V, k K) (V, error) { var v V; return v, nil }
func Swapped[V any, K comparable](m map[K]V, k K) (V, error) { var v V; return v, nil }
func Inst[T any](p Page[T], ps []*T) error { return nil }
`
	tests := []struct {
		fn, want string
	}{
		{"Plain", "(ctx,string)(error)"},
		{"One", "[1](ctx,$0)(error)"},
		{"Two", "[2](map[$0]$1,$0)($1,error)"},
		{"Swapped", "[2](map[$1]$0,$1)($0,error)"},
		{"Inst", "[1](struct,[]*$0)(error)"},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			got := shapeSkeleton(funcSig(t, src, tt.fn))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("skeleton (-want +got):\n%s", diff)
			}
		})
	}
}
