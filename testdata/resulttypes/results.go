// Package resulttypes: results that round-trip through encoding/json
// faithfully: nested and embedded structs, json tags, omitzero, maps with
// integer keys, byte slices, time, pointers, a type with its own JSON.
package resulttypes

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

type Money struct{ units int64 }

func (m Money) MarshalJSON() ([]byte, error)  { return json.Marshal(m.units) }
func (m *Money) UnmarshalJSON(b []byte) error { return json.Unmarshal(b, &m.units) }

type Meta struct {
	Created time.Time
	Labels  map[string]string `json:"labels,omitzero"`
}

type Report struct {
	Meta
	Title   string `json:"title"`
	Counts  map[int]uint8
	Blob    []byte
	Empty   []string
	Nil     []string
	Child   *Report
	Total   Money
	Matrix  [2][2]float64
	private struct{} `json:"-"`
	_       int
	Upper   string `json:",omitempty"`
}

// Build returns a report.
//
//idem:on_duplicate=wait
func Build(ctx context.Context, title string) (*Report, error) {
	runs.Add(1)
	return &Report{
		Meta:   Meta{Created: time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC), Labels: map[string]string{}},
		Title:  title,
		Counts: map[int]uint8{-1: 2, 3: 4},
		Blob:   []byte{0, 1, 2},
		Empty:  []string{},
		Child:  &Report{Title: "child", Total: Money{5}},
		Total:  Money{42},
		Matrix: [2][2]float64{{1, 2}, {3, 4.5}},
		Upper:  strings.ToUpper(title),
	}, nil
}
