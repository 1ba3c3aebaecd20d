package impl

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// Sealer encrypts stored records with authenticated encryption: the
// method set of idem.Sealer, which a Guard hands to its Transform.
type Sealer interface {
	// Seal encrypts plaintext and authenticates it together with ad.
	Seal(plaintext, ad []byte) ([]byte, error)
	// Open returns the plaintext of sealed, or an error when sealed was
	// not made by Seal with ad and a key the Sealer holds.
	Open(sealed, ad []byte) ([]byte, error)
}

// The envelope of a record a Guard transformed: EnvelopeMarker, its
// version, a flags byte, then the record (the identity header and body),
// compressed and then sealed as the flags say. No record of another form
// starts with EnvelopeMarker (see RecordMarker).
const (
	EnvelopeMarker  byte = 0xb3
	envelopeVersion byte = 1
	flagSealed      byte = 1 << 0
	flagCompressed  byte = 1 << 1
)

// MaxInflated bounds what a compressed record may inflate to when its
// function has no budget: a hostile store writer cannot make a reader
// allocate more than the largest record a store keeps.
const MaxInflated = 1 << 30

// Transform is how a Guard stores records: compressed when CompressMin is
// set and the record is at least that long (and compression makes it
// smaller), sealed when Sealer is set. The zero Transform stores records
// as they are.
type Transform struct {
	Sealer      Sealer
	CompressMin int
}

// Seal returns the stored form of rec, the record of key written by the
// function named name.
func (t Transform) Seal(name, key string, rec []byte) ([]byte, error) {
	var flags byte
	body := rec
	if t.CompressMin > 0 && len(rec) >= t.CompressMin {
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
	if t.Sealer == nil && flags == 0 {
		return rec, nil
	}
	head := []byte{EnvelopeMarker, envelopeVersion, flags}
	if t.Sealer != nil {
		head[2] |= flagSealed
		sealed, err := t.Sealer.Seal(body, sealAD(head, name, key))
		if err != nil {
			return nil, fmt.Errorf("idem: %s: sealing its record: %w", name, err)
		}
		body = sealed
	}
	return append(head, body...), nil
}

// Open returns the record inside data, a stored record of key read for
// the function named name: opened and inflated (to at most limit bytes)
// as its envelope says; data itself when it has none and t seals nothing.
// Anything that does not open is ErrCorruptRecord.
func (t Transform) Open(name, key string, data []byte, limit int64) ([]byte, error) {
	if len(data) == 0 || data[0] != EnvelopeMarker {
		if t.Sealer != nil {
			return nil, fmt.Errorf("%w: %s: the record is not sealed, and this Guard seals (WithSealer)", ErrCorruptRecord, key)
		}
		return data, nil
	}
	if len(data) < 3 || data[1] != envelopeVersion || data[2]&^(flagSealed|flagCompressed) != 0 {
		return nil, fmt.Errorf("%w: %s: unknown record envelope", ErrCorruptRecord, key)
	}
	head, flags, body := data[:3], data[2], data[3:]
	switch {
	case flags&flagSealed != 0 && t.Sealer == nil:
		return nil, fmt.Errorf("%w: %s: the record is sealed, and there is no Sealer to open it", ErrCorruptRecord, key)
	case flags&flagSealed == 0 && t.Sealer != nil:
		return nil, fmt.Errorf("%w: %s: the record is not sealed, and this Guard seals (WithSealer)", ErrCorruptRecord, key)
	case flags&flagSealed != 0:
		opened, err := t.Sealer.Open(body, sealAD(head, name, key))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: the sealed record does not open: %w", ErrCorruptRecord, key, err)
		}
		body = opened
	}
	if flags&flagCompressed != 0 {
		if limit <= 0 {
			limit = MaxInflated
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
	return body, nil
}

// Sealed reports whether data is a sealed record.
func Sealed(data []byte) bool {
	return len(data) >= 3 && data[0] == EnvelopeMarker && data[2]&flagSealed != 0
}

// deflaters and inflaters keep DEFLATE's state between records: a new
// writer allocates its ~1 MB of tables, more than compressing a 20 KB
// record costs.
var (
	deflaters = sync.Pool{New: func() any { w, _ := flate.NewWriter(nil, flate.BestSpeed); return w }}
	inflaters = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}
)

// sealAD binds a sealed record to its envelope, its function's name and
// its store key: moved to another key, or read for another function, it
// does not open.
func sealAD(head []byte, name, key string) []byte {
	ad := make([]byte, 0, len(head)+len(name)+len(key)+1)
	ad = append(append(ad, head...), name...)
	return append(append(ad, 0), key...)
}
