package impl

import (
	"encoding/binary"
	"fmt"
)

// The identity header of a stored record.
//
// Every record a Guard writes starts with a header naming the function
// that wrote it, so that two functions sharing a name and version never
// replay each other's records:
//
//	0xb2 (RecordMarker), RecordVersion,
//	uvarint len, the Spec's Signature,
//	then the record's body: the codec's bytes (a result) or the
//	recorded failure's JSON.
//
// A record without the header was written by a build from before records
// carried one. The header holds the Signature as given: idemgen's
// signatures are short digests already, and comparing the stored bytes
// costs a replay no hashing.
const (
	// RecordMarker is the first byte of a record that carries its
	// function's identity. No encoding/json document and no generated
	// codec's record (CodecMarker) starts with it.
	RecordMarker byte = 0xb2
	// RecordVersion is the header's layout version, the record's second
	// byte.
	RecordVersion byte = 2
)

// RecordHeader is the identity a record carries: the Signature of the
// Spec that wrote it (its name and version are in the record's key).
type RecordHeader struct {
	Signature string
}

// SplitRecord returns the identity header of a stored record (a completed
// result or a recorded failure) and the body that follows it. ok is false
// for a record written before records carried a header: body is then data
// itself. A header that does not parse is ErrCorruptRecord. Operator
// tools use it to show who wrote a record and to read a failure's JSON.
func SplitRecord(data []byte) (h RecordHeader, body []byte, ok bool, err error) {
	if len(data) == 0 || data[0] != RecordMarker {
		return RecordHeader{}, data, false, nil
	}
	corrupt := func(what string) error {
		return fmt.Errorf("%w: record header: %s", ErrCorruptRecord, what)
	}
	switch {
	case len(data) < 2:
		return RecordHeader{}, nil, true, corrupt("truncated")
	case data[1] != RecordVersion:
		return RecordHeader{}, nil, true, corrupt(fmt.Sprintf("layout version %d, this build reads %d", data[1], RecordVersion))
	}
	n, w := binary.Uvarint(data[2:])
	if w <= 0 || n > uint64(len(data)-2-w) {
		return RecordHeader{}, nil, true, corrupt("bad signature")
	}
	at := 2 + w
	return RecordHeader{Signature: string(data[at : at+int(n)])}, data[at+int(n):], true, nil
}

// AppendHeader appends the identity header of a record written under
// signature to b.
func AppendHeader(b []byte, signature string) []byte {
	b = append(b, RecordMarker, RecordVersion)
	b = binary.AppendUvarint(b, uint64(len(signature)))
	return append(b, signature...)
}

// HeaderLen is the length of AppendHeader's output for signature.
func HeaderLen(signature string) int {
	n := len(signature)
	w := 1 // the length's uvarint bytes
	for v := n; v >= 0x80; v >>= 7 {
		w++
	}
	return 2 + w + n
}

// OwnRecord returns the body of data when data starts with exactly the
// header AppendHeader writes for signature, for a signature under 128
// bytes (a one-byte length), in straight-line code: a replay's usual
// case, checked without parsing. Any other record goes to SplitRecord.
func OwnRecord(signature string, data []byte) ([]byte, bool) {
	n := 3 + len(signature)
	if len(signature) >= 0x80 || len(data) < n || data[0] != RecordMarker || data[1] != RecordVersion ||
		data[2] != byte(len(signature)) || string(data[3:n]) != signature {
		return nil, false
	}
	return data[n:], true
}
