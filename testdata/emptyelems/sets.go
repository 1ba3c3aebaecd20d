// Package emptyelems returns values whose elements are empty structs (a
// set as map[string]struct{}): their codecs write no element bytes, and
// the generated code must still compile.
package emptyelems

import (
	"context"
	"sync/atomic"
)

var runs atomic.Int64

// Marker is an empty struct of this package.
type Marker struct{}

// Sets is what Tags returns.
type Sets struct {
	Set     map[string]struct{}
	Markers map[int]Marker
	Slots   []struct{}
	Fixed   [2]Marker
}

// Tags returns the tags of an item as sets.
//
//idem:ttl=1h
func Tags(ctx context.Context, item string) (Sets, error) {
	runs.Add(1)
	return Sets{
		Set:     map[string]struct{}{"a": {}, item: {}},
		Markers: map[int]Marker{1: {}, 2: {}},
		Slots:   make([]struct{}, 3),
	}, nil
}
