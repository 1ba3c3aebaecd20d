// Package missingforeign wraps another package's function only, and was
// never generated: the missing file is reported at its directive.
package missingforeign

import "os"

/* want `idem_gen.go is missing: run go generate` */ //idem:ttl=2h
var _ = os.Remove
