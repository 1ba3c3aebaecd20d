package idem

import (
	"time"
)

// monoBase is the origin of the process's monotonic readings: Guards time
// leases as time.Since(monoBase).
var monoBase = time.Now()
