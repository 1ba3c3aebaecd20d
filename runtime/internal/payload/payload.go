// Package payload writes a request's body into its call's payload
// fingerprint the one way the adapters that guard requests (idemhttp,
// idemgrpc, idemhook) share.
package payload

import (
	"crypto/sha256"

	"github.com/idemgen/idemgen/runtime/internal/impl"
)

// Inline is the largest body written into the fingerprint as is; a larger
// one goes in as its SHA-256, so the pooled builder never holds a large
// body.
const Inline = 2048

// Body writes body into b, as is or as its SHA-256 (past Inline bytes),
// after a flag that keeps the two forms apart.
func Body(b *impl.KeyBuilder, body []byte) {
	if len(body) <= Inline {
		b.Bool(false)
		b.Bytes(body)
		return
	}
	sum := sha256.Sum256(body)
	b.Bool(true)
	b.Bytes(sum[:])
}
