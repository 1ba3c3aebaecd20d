// Package adapter holds what the adapters that guard requests (idemhttp,
// idemgrpc, idemhook) do alike: how a request's body enters its call's
// payload fingerprint, and how its client's principal is resolved.
package adapter

import (
	"crypto/sha256"
	"errors"

	"github.com/idemgen/idemgen/runtime/internal/impl"
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
