package idem

import (
	"time"
)

// monoBase is the origin of the process's monotonic readings: Guards time
// leases as time.Since(monoBase), and the memory store's default clock is
// monoNow, so the two can share one reading.
var monoBase = time.Now()

// monoNow is the current time on the monotonic clock alone.
func monoNow() time.Time { return monoBase.Add(time.Since(monoBase)) }
