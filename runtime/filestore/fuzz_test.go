package filestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

func fuzzSeeds(f *testing.F) {
	t0 := time.Unix(1_700_000_000, 123_456_789)
	for _, r := range []idemstore.Record{
		{Key: "idem:f:v0:abc", State: idemstore.StateInProgress, Fence: 1, Owner: idemstore.Token{1, 2}, Fingerprint: idemstore.Fingerprint{3}, LeaseUntil: t0, ExpiresAt: t0.Add(time.Hour), UpdatedAt: t0, ClaimedAt: t0},
		{Key: "k", State: idemstore.StateCompleted, Fence: 7, Result: []byte(`{"ok":true}`), LeaseUntil: t0, ExpiresAt: t0.Add(24 * time.Hour), UpdatedAt: t0},
		{Key: "", State: idemstore.StateFailed, Fence: 1 << 40, Result: []byte(`{"message":"boom"}`), ExpiresAt: t0},
		{Key: "released", State: idemstore.StateReleased, Fence: 3, ExpiresAt: t0},
		{Key: "stepped", State: idemstore.StateInProgress, Fence: 2, LeaseUntil: t0, ExpiresAt: t0,
			Steps: map[string][]byte{"charge": []byte("ch_1"), "": {}, "email": nil}},
	} {
		f.Add(encodeRecord(&r))
		f.Add(encodeRecordV1(&r))
	}
	f.Add([]byte{})
	f.Add([]byte("IDEMFS"))
	f.Add(make([]byte, headerSize+trailerSize))
}

// checkDecode is the property both fuzz targets share: decodeRecord never
// panics, rejects with ErrCorruptRecord only, and what it accepts encodes
// back to exactly the same bytes (the format has one encoding per record,
// so nothing in a file is silently ignored).
func checkDecode(t *testing.T, b []byte) {
	r, err := decodeRecord(b)
	if err != nil {
		if !errors.Is(err, idem.ErrCorruptRecord) {
			t.Fatalf("rejection does not wrap ErrCorruptRecord: %v", err)
		}
		return
	}
	switch r.State {
	case idemstore.StateInProgress, idemstore.StateCompleted, idemstore.StateFailed, idemstore.StateReleased:
	default:
		t.Fatalf("accepted state %d", r.State)
	}
	if b[6] == formatV3 && len(r.Steps) == 0 {
		t.Fatal("accepted a version-3 record without steps (it has a version-2 encoding)")
	}
	enc := encodeRecord
	if b[6] == formatV1 {
		enc = encodeRecordV1
	}
	if got := enc(&r); !bytes.Equal(got, b) {
		t.Fatalf("encode(decode(b)) differs from b:\n got %x\nwant %x", got, b)
	}
}

// FuzzDecodeRecord feeds arbitrary files to the record decoder. Run with
//
//	go test -run '^$' -fuzz '^FuzzDecodeRecord$' -fuzztime 5m -parallel 1 ./runtime/filestore
func FuzzDecodeRecord(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b) })
}

// FuzzDecodeRecordValidCRC is FuzzDecodeRecord with the checksum repaired
// before decoding, so mutations reach the field checks behind the CRC
// (lengths, state) instead of all failing at the checksum.
//
//	go test -run '^$' -fuzz '^FuzzDecodeRecordValidCRC$' -fuzztime 5m -parallel 1 ./runtime/filestore
func FuzzDecodeRecordValidCRC(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if n := len(b) - trailerSize; n >= 0 {
			b = append([]byte(nil), b...)
			binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], castagnoli))
		}
		checkDecode(t, b)
	})
}

// encodeRecordV1 writes r in the previous format, without ClaimedAt
// (tests of reading records an earlier version wrote).
func encodeRecordV1(r *idemstore.Record) []byte {
	v2 := encodeRecord(r)
	b := make([]byte, 0, len(v2)-8)
	b = append(b, v2[:88]...)
	b = append(b, v2[96:len(v2)-trailerSize]...)
	b[6] = formatV1
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}
