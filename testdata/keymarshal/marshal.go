// Package keymarshal keys other packages' types with unexported fields
// through their encoding.TextMarshaler and encoding.BinaryMarshaler
// methods (value and pointer receivers, values and pointers, an interface).
package keymarshal

import (
	"context"
	"encoding"
	"sync/atomic"

	"github.com/idemgen/idemgen/testdata/keymarshal/money"
)

var runs atomic.Int64

// Charge holds marshalers by value and by pointer.
type Charge struct {
	Amount money.Amount
	Token  money.Token
	Backup *money.Token
	Prices map[string]money.Amount
}

// Pay charges once per charge.
//
//idem:ttl=1h
func Pay(ctx context.Context, c Charge, label encoding.TextMarshaler) (int64, error) {
	return runs.Add(1), nil
}
