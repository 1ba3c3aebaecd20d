package filestore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"maps"
	"slices"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// On-disk record format, version 2. Every integer is big-endian.
//
//	off  size  field
//	  0     6  magic "IDEMFS"
//	  6     1  format version (2)
//	  7     1  state (idemstore.State, 1..4)
//	  8     8  fence
//	 16    16  owner token
//	 32    32  fingerprint
//	 64     8  lease until   (Unix ns, 0 = zero time)
//	 72     8  expires at    (Unix ns)
//	 80     8  updated at    (Unix ns)
//	 88     8  claimed at    (Unix ns, 0 = zero time)
//	 96     4  key length k
//	100     4  result length n
//	104     k  key
//	104+k   n  result
//	104+k+n 4  CRC-32C of every byte before it
//
// Version 3 is version 2 with the call's recovery points (idemstore.Stepper):
// a record with steps is written in it, one without them in version 2.
//
//	 96     4  key length k
//	100     4  result length n
//	104     4  steps length m
//	108     k  key
//	108+k   n  result
//	108+k+n m  steps: per step, by name in increasing order, a 4-byte name
//	           length, the name, a 4-byte data length, the data
//	108+k+n+m 4  CRC-32C of every byte before it
//
// Version 1, written before records carried ClaimedAt, is version 2
// without the claimed-at field (the lengths at 88 and 92, the key at 96).
// The store still reads it, with a zero ClaimedAt, and writes version 2
// when it next writes the record. A build that reads only version 1
// reports a version-2 record as idem.ErrCorruptRecord (it never
// overwrites it): processes sharing a directory are upgraded together.
//
// The checksum covers the whole file, so a truncated, zero-filled or
// partly overwritten file (a torn write after a power loss with fsync
// disabled, a disk error, a stray editor) fails to decode and is reported
// as idem.ErrCorruptRecord instead of being mistaken for an absent key.
// The key is stored so a record can be listed and checked against the name
// it was found under.
const (
	recordMagic   = "IDEMFS"
	formatVersion = 2
	headerSize    = 104
	// formatV3 and headerSizeV3 are the format of records with steps.
	formatV3     = 3
	headerSizeV3 = 108
	// formatV1 and headerSizeV1 are the previous record format's.
	formatV1     = 1
	headerSizeV1 = 96
	trailerSize  = 4
	// maxRecordSize bounds what decode accepts, so a garbage length field
	// cannot make a reader allocate gigabytes.
	maxRecordSize = 1 << 30
	// orderVersion is the order record's format version.
	orderVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeRecord(r *idemstore.Record) []byte {
	hdr, version, steps := headerSize, byte(formatVersion), []byte(nil)
	if len(r.Steps) > 0 {
		hdr, version, steps = headerSizeV3, formatV3, encodeSteps(r.Steps)
	}
	b := make([]byte, hdr+len(r.Key)+len(r.Result)+len(steps)+trailerSize)
	copy(b, recordMagic)
	b[6] = version
	b[7] = byte(r.State)
	binary.BigEndian.PutUint64(b[8:], r.Fence)
	copy(b[16:32], r.Owner[:])
	copy(b[32:64], r.Fingerprint[:])
	binary.BigEndian.PutUint64(b[64:], uint64(unixNano(r.LeaseUntil)))
	binary.BigEndian.PutUint64(b[72:], uint64(unixNano(r.ExpiresAt)))
	binary.BigEndian.PutUint64(b[80:], uint64(unixNano(r.UpdatedAt)))
	binary.BigEndian.PutUint64(b[88:], uint64(unixNano(r.ClaimedAt)))
	binary.BigEndian.PutUint32(b[96:], uint32(len(r.Key)))
	binary.BigEndian.PutUint32(b[100:], uint32(len(r.Result)))
	if version == formatV3 {
		binary.BigEndian.PutUint32(b[104:], uint32(len(steps)))
	}
	n := hdr
	n += copy(b[n:], r.Key)
	n += copy(b[n:], r.Result)
	n += copy(b[n:], steps)
	binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

// decodeRecord parses b. Any inconsistency is an error wrapping
// idem.ErrCorruptRecord; the caller adds the file name.
func decodeRecord(b []byte) (idemstore.Record, error) {
	var r idemstore.Record
	if len(b) < headerSizeV1+trailerSize {
		return r, fmt.Errorf("%w: %d bytes, shorter than a record header", idem.ErrCorruptRecord, len(b))
	}
	if string(b[:6]) != recordMagic {
		return r, fmt.Errorf("%w: bad magic %q", idem.ErrCorruptRecord, b[:6])
	}
	hdr, lengths := headerSize, headerSize-8
	switch b[6] {
	case formatVersion:
	case formatV3:
		hdr = headerSizeV3
	case formatV1:
		hdr, lengths = headerSizeV1, headerSizeV1-8
	default:
		return r, fmt.Errorf("%w: unsupported format version %d (this build reads %d to %d)", idem.ErrCorruptRecord, b[6], formatV1, formatV3)
	}
	if len(b) < hdr+trailerSize {
		return r, fmt.Errorf("%w: %d bytes, shorter than a record header", idem.ErrCorruptRecord, len(b))
	}
	kl := uint64(binary.BigEndian.Uint32(b[lengths:]))
	rl := uint64(binary.BigEndian.Uint32(b[lengths+4:]))
	var sl uint64
	if hdr == headerSizeV3 {
		sl = uint64(binary.BigEndian.Uint32(b[104:]))
	}
	if want := uint64(hdr) + kl + rl + sl + trailerSize; want != uint64(len(b)) {
		return r, fmt.Errorf("%w: length fields say %d bytes, file has %d", idem.ErrCorruptRecord, want, len(b))
	}
	n := len(b) - trailerSize
	if got, want := crc32.Checksum(b[:n], castagnoli), binary.BigEndian.Uint32(b[n:]); got != want {
		return r, fmt.Errorf("%w: checksum mismatch (%08x, stored %08x)", idem.ErrCorruptRecord, got, want)
	}
	r.State = idemstore.State(b[7])
	switch r.State {
	case idemstore.StateInProgress, idemstore.StateCompleted, idemstore.StateFailed, idemstore.StateReleased:
	default:
		return r, fmt.Errorf("%w: invalid state %d", idem.ErrCorruptRecord, b[7])
	}
	r.Fence = binary.BigEndian.Uint64(b[8:])
	copy(r.Owner[:], b[16:32])
	copy(r.Fingerprint[:], b[32:64])
	r.LeaseUntil = fromUnixNano(int64(binary.BigEndian.Uint64(b[64:])))
	r.ExpiresAt = fromUnixNano(int64(binary.BigEndian.Uint64(b[72:])))
	r.UpdatedAt = fromUnixNano(int64(binary.BigEndian.Uint64(b[80:])))
	if hdr == headerSize {
		r.ClaimedAt = fromUnixNano(int64(binary.BigEndian.Uint64(b[88:])))
	}
	r.Key = string(b[hdr : uint64(hdr)+kl])
	rEnd := uint64(hdr) + kl + rl
	if rl > 0 {
		r.Result = append([]byte(nil), b[uint64(hdr)+kl:rEnd]...)
	}
	if hdr == headerSizeV3 {
		steps, err := decodeSteps(b[rEnd:n])
		if err != nil {
			return r, err
		}
		r.Steps = steps
	}
	return r, nil
}

// encodeSteps writes steps in their one encoding: by name, increasing.
func encodeSteps(steps map[string][]byte) []byte {
	var b []byte
	for _, name := range slices.Sorted(maps.Keys(steps)) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(steps[name])))
		b = append(b, steps[name]...)
	}
	return b
}

// decodeSteps parses a version-3 steps section, which holds at least one
// step, by name in strictly increasing order (anything else has another
// encoding, or none).
func decodeSteps(b []byte) (map[string][]byte, error) {
	steps := map[string][]byte{}
	prev := ""
	for len(b) > 0 {
		name, rest, ok := cutField(b)
		if !ok || (len(steps) > 0 && string(name) <= prev) {
			return nil, fmt.Errorf("%w: malformed or unordered step name", idem.ErrCorruptRecord)
		}
		data, rest, ok := cutField(rest)
		if !ok {
			return nil, fmt.Errorf("%w: step %q: malformed data length", idem.ErrCorruptRecord, name)
		}
		prev = string(name)
		steps[prev] = append([]byte{}, data...)
		b = rest
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("%w: a version-3 record without steps", idem.ErrCorruptRecord)
	}
	return steps, nil
}

// cutField splits a 4-byte length and that many bytes off b.
func cutField(b []byte) (field, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := uint64(binary.BigEndian.Uint32(b))
	if n > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Order record format, version 1: an entity's last accepted event time for
// per-entity ordering (idemstore.OrderClaim), kept in <sha256(order key)>.ord.
//
//	off  size  field
//	  0     6  magic "IDEMFO"
//	  6     1  format version (1)
//	  7     1  reserved (0)
//	  8     8  last accepted (Unix ns)
//	 16     8  expires at (Unix ns)
//	 24     4  key length k
//	 28     k  order key
//	28+k    4  CRC-32C of every byte before it
const (
	orderMagic      = "IDEMFO"
	orderHeaderSize = 28
)

type orderRecord struct {
	key       string
	last      time.Time
	expiresAt time.Time
}

func encodeOrder(o *orderRecord) []byte {
	b := make([]byte, orderHeaderSize+len(o.key)+trailerSize)
	copy(b, orderMagic)
	b[6] = orderVersion
	binary.BigEndian.PutUint64(b[8:], uint64(unixNano(o.last)))
	binary.BigEndian.PutUint64(b[16:], uint64(unixNano(o.expiresAt)))
	binary.BigEndian.PutUint32(b[24:], uint32(len(o.key)))
	n := orderHeaderSize + copy(b[orderHeaderSize:], o.key)
	binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
	return b
}

func decodeOrder(b []byte) (orderRecord, error) {
	var o orderRecord
	if len(b) < orderHeaderSize+trailerSize {
		return o, fmt.Errorf("%w: %d bytes, shorter than an order record header", idem.ErrCorruptRecord, len(b))
	}
	if string(b[:6]) != orderMagic {
		return o, fmt.Errorf("%w: bad magic %q", idem.ErrCorruptRecord, b[:6])
	}
	if b[6] != orderVersion {
		return o, fmt.Errorf("%w: unsupported format version %d (this build reads %d)", idem.ErrCorruptRecord, b[6], orderVersion)
	}
	kl := uint64(binary.BigEndian.Uint32(b[24:]))
	if want := orderHeaderSize + kl + trailerSize; want != uint64(len(b)) {
		return o, fmt.Errorf("%w: length fields say %d bytes, file has %d", idem.ErrCorruptRecord, want, len(b))
	}
	n := len(b) - trailerSize
	if got, want := crc32.Checksum(b[:n], castagnoli), binary.BigEndian.Uint32(b[n:]); got != want {
		return o, fmt.Errorf("%w: checksum mismatch (%08x, stored %08x)", idem.ErrCorruptRecord, got, want)
	}
	o.last = fromUnixNano(int64(binary.BigEndian.Uint64(b[8:])))
	o.expiresAt = fromUnixNano(int64(binary.BigEndian.Uint64(b[16:])))
	o.key = string(b[orderHeaderSize:n])
	return o, nil
}
