// Package options applies the functional options of the adapters that
// take them (idemhttp, idemgrpc, idemhook) the one way they share.
package options

import "fmt"

// Apply returns def with opts applied in order, or the error check finds,
// prefixed with pkg (the adapter's package name) as its own errors are.
func Apply[C any, O ~func(*C)](pkg string, def C, opts []O, check func(*C) error) (C, error) {
	for _, o := range opts {
		o(&def)
	}
	if err := check(&def); err != nil {
		return def, fmt.Errorf("%s: %w", pkg, err)
	}
	return def, nil
}
