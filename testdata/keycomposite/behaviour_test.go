package keycomposite

import (
	"context"
	"testing"
)

func TestComposite(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	p := &Point{1, 2}
	mk := func() Shape {
		return Shape{Points: []Point{{1, 2}}, Hash: [4]byte{1}, Raw: []byte("x"),
			Index: map[string][]int{"a": {1}, "b": nil}, Nested: map[int]map[string]*Point{1: {"p": p}},
			PP: &p, Keys: map[Point]bool{{1, 1}: true, {2, 2}: false}, PtrSlice: []*Point{nil, p}}
	}
	tags := map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}
	call := func(s Shape, ids []string, tags map[string]string, p *Point) {
		t.Helper()
		if _, err := api.Draw(ctx, s, ids, tags, p, [2]Point{}); err != nil {
			t.Fatal(err)
		}
	}
	call(mk(), []string{"x"}, tags, p)
	// Same values, fresh maps (other iteration order): same key.
	tags2 := map[string]string{"d": "4", "c": "3", "b": "2", "a": "1"}
	call(mk(), []string{"x"}, tags2, &Point{1, 2})
	if n := runs.Load(); n != 1 {
		t.Fatalf("ran %d times, want 1", n)
	}
	want := int64(1)
	expectNew := func(what string, s Shape, ids []string, tags map[string]string, p *Point) {
		t.Helper()
		call(s, ids, tags, p)
		want++
		if n := runs.Load(); n != want {
			t.Fatalf("%s: ran %d times, want %d", what, n, want)
		}
	}
	expectNew("nil vs empty slice", mk(), nil, tags, p)
	expectNew("empty slice", mk(), []string{}, tags, p)
	expectNew("nil map", mk(), []string{"x"}, nil, p)
	expectNew("empty map", mk(), []string{"x"}, map[string]string{}, p)
	expectNew("nil pointer", mk(), []string{"x"}, tags, nil)
	s := mk()
	s.Raw = nil
	expectNew("nil bytes", s, []string{"x"}, tags, p)
	s = mk()
	s.Grid[1][2] = 9
	expectNew("array element", s, []string{"x"}, tags, p)
	s = mk()
	s.Nested[1]["p"] = &Point{7, 7}
	expectNew("nested map value", s, []string{"x"}, tags, p)
	s = mk()
	s.Anon.B = "b"
	expectNew("anonymous struct field", s, []string{"x"}, tags, p)
}
