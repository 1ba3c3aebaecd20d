// Package keycomposite: slices, arrays, byte slices and arrays, maps
// (nested), pointers (double), anonymous structs; nil differs from empty.
package keycomposite

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

type Point struct{ X, Y int }

type Shape struct {
	Points   []Point
	Grid     [2][3]int
	Hash     [4]byte
	Raw      []byte
	Index    map[string][]int
	Nested   map[int]map[string]*Point
	PP       **Point
	Anon     struct{ A, B string }
	PtrSlice []*Point
	Keys     map[Point]bool
}

// Draw renders a shape.
//
//idem:on_duplicate=return
func Draw(ctx context.Context, s Shape, ids []string, tags map[string]string, p *Point, arr [2]Point) (int64, error) {
	return runs.Add(1), nil
}
