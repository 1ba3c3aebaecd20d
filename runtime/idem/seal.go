package idem

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

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
// before it is sealed and stored; smaller records are stored as they are.
// Records are read whatever their form.
func WithCompression(minBytes int) Option {
	return func(c *config) { c.compressMin = max(minBytes, 1) }
}

// The envelope of a record the Guard transformed: envelopeMarker,
// envelopeVersion, a flags byte, then the record (the identity header and
// body), compressed and then sealed as the flags say. No record of another
// form starts with envelopeMarker (see idemimpl.RecordMarker).
const (
	envelopeMarker  byte = 0xb3
	envelopeVersion byte = 1
	flagSealed      byte = 1 << 0
	flagCompressed  byte = 1 << 1
)

// maxInflated bounds what a compressed record may inflate to when the
// function has no budget: a hostile store writer cannot make a reader
// allocate more than the largest record a store keeps.
const maxInflated = 1 << 30

// sealRecord is the stored form of rec, the record of key written by
// spec's function: compressed and sealed as the Guard is configured, rec
// itself otherwise.
func (g *Guard) sealRecord(spec *Spec, key string, rec []byte) ([]byte, error) {
	var flags byte
	body := rec
	if g.compressMin > 0 && len(rec) >= g.compressMin {
		var b bytes.Buffer
		w := deflaters.Get().(*flate.Writer)
		w.Reset(&b)
		w.Write(rec)
		err := w.Close()
		deflaters.Put(w)
		if err != nil {
			return nil, err
		}
		if b.Len() < len(rec) {
			body, flags = b.Bytes(), flags|flagCompressed
		}
	}
	if g.sealer == nil && flags == 0 {
		return rec, nil
	}
	head := []byte{envelopeMarker, envelopeVersion, flags}
	if g.sealer != nil {
		head[2] |= flagSealed
		sealed, err := g.sealer.Seal(body, sealAD(head, spec, key))
		if err != nil {
			return nil, fmt.Errorf("idem: %s: sealing its record: %w", spec.Name, err)
		}
		body = sealed
	}
	return append(head, body...), nil
}

// openRecord returns the body of data, a stored record of key read for
// spec's function: opened and inflated as its envelope says, then checked
// as checkRecord does.
func (g *Guard) openRecord(spec *Spec, key string, data []byte) ([]byte, error) {
	if len(data) == 0 || data[0] != envelopeMarker {
		if g.sealer != nil {
			return nil, fmt.Errorf("%w: %s: the record is not sealed, and this Guard seals (WithSealer)", ErrCorruptRecord, key)
		}
		return checkRecord(spec, data)
	}
	if len(data) < 3 || data[1] != envelopeVersion || data[2]&^(flagSealed|flagCompressed) != 0 {
		return nil, fmt.Errorf("%w: %s: unknown record envelope", ErrCorruptRecord, key)
	}
	head, flags, body := data[:3], data[2], data[3:]
	switch {
	case flags&flagSealed != 0 && g.sealer == nil:
		return nil, fmt.Errorf("%w: %s: the record is sealed, and this Guard has no Sealer", ErrCorruptRecord, key)
	case flags&flagSealed == 0 && g.sealer != nil:
		return nil, fmt.Errorf("%w: %s: the record is not sealed, and this Guard seals (WithSealer)", ErrCorruptRecord, key)
	case flags&flagSealed != 0:
		opened, err := g.sealer.Open(body, sealAD(head, spec, key))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: the sealed record does not open: %w", ErrCorruptRecord, key, err)
		}
		body = opened
	}
	if flags&flagCompressed != 0 {
		limit := int64(maxInflated)
		if b := g.budget(spec); b > 0 {
			limit = int64(b)
		}
		r := inflaters.Get().(io.ReadCloser)
		r.(flate.Resetter).Reset(bytes.NewReader(body), nil)
		inflated, err := io.ReadAll(io.LimitReader(r, limit+1))
		inflaters.Put(r)
		if err != nil || int64(len(inflated)) > limit {
			return nil, fmt.Errorf("%w: %s: the compressed record does not inflate within %d bytes (%v)", ErrCorruptRecord, key, limit, err)
		}
		body = inflated
	}
	return checkRecord(spec, body)
}

// deflaters and inflaters keep DEFLATE's state between records: a new
// writer allocates its ~1 MB of tables, more than compressing a 20 KB
// record costs.
var (
	deflaters = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w }}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// sealAD binds a sealed record to its envelope, its function's name and its
// store key: moved to another key, or read for another function, it does
// not open.
func sealAD(head []byte, spec *Spec, key string) []byte {
	ad := make([]byte, 0, len(head)+len(spec.Name)+len(key)+1)
	ad = append(append(ad, head...), spec.Name...)
	return append(append(ad, 0), key...)
}
