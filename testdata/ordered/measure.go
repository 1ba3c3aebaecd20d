// Package ordered: order= applies events of one entity in time order,
// grace= tolerates late arrivals, and a replay stays a replay.
package ordered

import (
	"context"
	"sync/atomic"
	"time"
)

var applied atomic.Int64

// Measurement is one reading of a user's device.
type Measurement struct {
	EventID   string
	UserID    string
	Timestamp time.Time
	Value     float64
}

// Apply records a measurement once per event, in time order per user.
//
//idem:key=m.EventID order=m.UserID:m.Timestamp
func Apply(ctx context.Context, m Measurement) (int64, error) {
	return applied.Add(1), nil
}

// ApplyLate tolerates measurements up to five minutes late.
//
//idem:key=m.EventID order=m.UserID:m.Timestamp grace=5m name=ordered.late
func ApplyLate(ctx context.Context, m Measurement) (int64, error) {
	return applied.Add(1), nil
}

// Device is a composite entity: the whole struct is the entity's key.
type Device struct {
	Tenant string
	Serial int64
}

// Reading reaches its time through a pointer.
type Reading struct {
	ID     string
	Device *Device
	At     *time.Time
}

// Record orders readings per device; a reading without a time is rejected.
//
//idem:key=r.ID order=r.Device:r.At grace=1s
func Record(ctx context.Context, r *Reading) error {
	applied.Add(1)
	return nil
}
