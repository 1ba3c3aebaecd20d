// Package marshalers: types implementing encoding.BinaryMarshaler or
// encoding.TextMarshaler are keyed by what they marshal to (netip.Addr,
// big.Int, a local type); time.Time is keyed as an instant.
package marshalers

import (
	"context"
	"errors"
	"math/big"
	"net/netip"
	"sync/atomic"
	"time"
)

var runs atomic.Int64

// Level marshals to text; unknown levels fail to marshal.
type Level struct{ n int }

func (l Level) MarshalText() ([]byte, error) {
	switch l.n {
	case 0:
		return []byte("info"), nil
	case 1:
		return []byte("warn"), nil
	}
	return nil, errors.New("unknown level")
}

func (l *Level) UnmarshalText(b []byte) error { return nil }

type Request struct {
	From  netip.Addr
	Limit *big.Int
	Level Level
	At    time.Time
}

// Allow admits a request.
//
//idem:on_duplicate=return
func Allow(ctx context.Context, r Request, prefix netip.Prefix) (int64, error) {
	return runs.Add(1), nil
}
