package idem

// Sealer encrypts the records a Guard stores (results, recorded failures,
// steps) with authenticated encryption, below every codec: generated
// codecs' bytes are sealed too. runtime/idemseal's Keyring is one, with key
// rotation.
type Sealer interface {
	// Seal encrypts plaintext and authenticates it together with ad.
	Seal(plaintext, ad []byte) ([]byte, error)
	// Open returns the plaintext of sealed, or an error when sealed was
	// not made by Seal with ad and a key the Sealer holds.
	Open(sealed, ad []byte) ([]byte, error)
}

// WithSealer seals every record the Guard stores with s, bound to its
// store key and function: a record moved to another key, truncated, or
// sealed with a key s does not hold fails to open and is ErrCorruptRecord
// (fail closed, nothing runs). A Guard with a Sealer also refuses records
// that are not sealed, which a store reader could otherwise plant; records
// written before sealing was turned on are refused until they expire.
func WithSealer(s Sealer) Option { return func(c *config) { c.sealer = s } }

// WithCompression compresses (DEFLATE) every record of at least minBytes
// before it is sealed and stored, when that makes it smaller. Records are
// read whatever their form.
func WithCompression(minBytes int) Option {
	return func(c *config) { c.compressMin = max(minBytes, 1) }
}

// sealRecord is the stored form of rec, the record of key written by
// spec's function (impl.Transform).
func (g *Guard) sealRecord(spec *Spec, key string, rec []byte) ([]byte, error) {
	return g.transform.Seal(spec.Name, key, rec)
}

// openRecord returns the body of data, a stored record of key read for
// spec's function: opened and inflated as its envelope says (at most to
// readLimit), then checked as checkRecord does.
func (g *Guard) openRecord(spec *Spec, key string, data []byte) ([]byte, error) {
	rec, err := g.transform.Open(spec.Name, key, data, int64(g.readLimit(spec)))
	if err != nil {
		return nil, err
	}
	return checkRecord(spec, rec)
}
