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

// TestBasicKind: which constraints key a type parameter's value by one
// basic kind, and how. Different kinds (integer and string, integer and
// float) have no one-to-one conversion in common and are refused.
func TestBasicKind(t *testing.T) {
	const src = `package p

type Cents int64
type Signed interface{ ~int | ~int8 | ~int16 | ~int32 | ~int64 }
type Unsigned interface{ ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 }
type Integer interface{ Signed | Unsigned }
type Texter interface{ MarshalText() ([]byte, error) }

func Str[T ~string]()                 {}
func Ints[T ~int | ~int64]()          {}
func Uints[T Unsigned]()              {}
func Mixed[T Integer]()               {}
func Float[T ~float32 | ~float64]()   {}
func Named[T Cents]()                 {}
func IntStr[T ~int | ~string]()       {}
func IntFloat[T ~int64 | ~float64]()  {}
func Any[T any]()                     {}
func Comparable[T comparable]()       {}
func Methods[T Texter]()              {}
func Both[T interface{ ~string; Texter }]() {}
`
	tests := []struct {
		fn           string
		method, conv string
		terms        int
	}{
		{"Str", "String", "string", 1},
		{"Ints", "Int", "int64", 2},
		{"Uints", "Uint", "uint64", 5},
		{"Mixed", "Int", "int64", 10},
		{"Float", "Float", "float64", 2},
		{"Named", "Int", "int64", 1},
		{"IntStr", "", "", 2},
		{"IntFloat", "", "", 2},
		{"Any", "", "", 0},
		{"Comparable", "", "", 0},
		{"Methods", "", "", 0},
		{"Both", "String", "string", 1},
	}
	for _, tt := range tests {
		t.Run(tt.fn, func(t *testing.T) {
			tp := funcSig(t, src, tt.fn).TypeParams().At(0)
			terms, ok := typeTerms(tp.Constraint())
			if !ok {
				t.Fatalf("typeTerms(%s) not computed", tp.Constraint())
			}
			method, conv := basicKind(terms)
			got := []any{method, conv, len(terms)}
			if diff := cmp.Diff([]any{tt.method, tt.conv, tt.terms}, got); diff != "" {
				t.Errorf("method, conversion, terms (-want +got):\n%s", diff)
			}
		})
	}
}
