// Package adapter holds what the adapters that guard requests (idemhttp,
// idemgrpc, idemhook) do alike: how a request's body enters its call's
// payload fingerprint, how its client's principal is resolved, and how a
// constructor checks its Guard and builds its calls' spec.
package adapter

import (
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/internal/impl"
	"github.com/idemgen/idemgen/runtime/internal/options"
)

// InlineBody is the largest body written into the fingerprint as is; a
// larger one goes in as its SHA-256, so the pooled builder never holds a
// large body.
const InlineBody = 2048

// WriteBody writes body into b, as is or as its SHA-256 (past InlineBody
// bytes), after a flag that keeps the two forms apart.
func WriteBody(b *impl.KeyBuilder, body []byte) {
	if len(body) <= InlineBody {
		b.Bool(false)
		b.Bytes(body)
		return
	}
	sum := sha256.Sum256(body)
	b.Bool(true)
	b.Bytes(sum[:])
}

// Principal is the principal fn names for the request r: "" without fn,
// an error where fn fails or names none (an empty principal of a
// configured function is a client left unidentified, not a shared one).
func Principal[R any, F ~func(R) (string, error)](fn F, r R) (string, error) {
	if fn == nil {
		return "", nil
	}
	p, err := fn(r)
	if err == nil && p == "" {
		err = errors.New("empty principal")
	}
	return p, err
}

// Configure is how the constructor fn of the adapter pkg starts: it needs
// g, then opts apply over def (options.Apply).
func Configure[C any, O ~func(*C)](pkg, fn string, g *idem.Guard, def C, opts []O, check func(*C) error) (C, error) {
	if g == nil {
		return def, fmt.Errorf("%s: %s: nil Guard", pkg, fn)
	}
	return options.Apply(pkg, def, opts, check)
}

// Spec is the spec of the adapter pkg's calls, named name, with call
// applied. A failure releases the key: the adapter answers it without
// recording it, and the client's retry runs again.
func Spec(pkg, name string, call []idemcall.Option) (idem.Spec, error) {
	spec, err := idemcall.Spec(idem.Spec{Name: name}, call...)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", pkg, err)
	}
	spec.OnFailure = idem.FailureUnlock
	return spec, nil
}
