// Package keybasic: every basic kind, named basic types, time.Duration
// and time.Time in a key.
package keybasic

import (
	"context"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

type Cents int64
type Currency string
type Flag bool
type Ratio float32

type Basics struct {
	B    bool
	I    int
	I8   int8
	I16  int16
	I32  int32
	I64  int64
	U    uint
	U8   uint8
	U16  uint16
	U32  uint32
	U64  uint64
	UP   uintptr
	F32  float32
	F64  float64
	C64  complex64
	C128 complex128
	S    string
	R    rune
	By   byte
	D    time.Duration
	T    time.Time
	Amt  Cents
	Cur  Currency
	Fl   Flag
	Rat  Ratio
}

// Record stores a row.
//
//idem:on_duplicate=return
func Record(ctx context.Context, b Basics, n int, f float64, c Currency, d time.Duration, at time.Time) (int64, error) {
	return runs.Add(1), nil
}
