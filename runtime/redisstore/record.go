package redisstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// A record is one Redis string value, so a replay is one GET inside the
// claim script and the record's memory is one allocation on the server:
//
//	offset size field
//	0      1    magic 0xA7 (anything else is not ours)
//	1      1    encoding version (3)
//	2      1    state (idemstore.State: 1 in_progress, 2 completed, 3 failed, 4 released)
//	3      8    fence, big-endian
//	11     8    lease expiry, µs since the Unix epoch (server clock)
//	19     8    record expiry, µs (the key's Redis TTL ends here too)
//	27     8    updated at, µs
//	35     8    op id of the write that produced the record (retry detection)
//	43     16   owner token
//	59     32   fingerprint
//	91     8    claimed at, µs (0: unknown)
//	99     …    result data (completed, failed), empty otherwise
//
// Version 4 is version 3 for a call in progress or released that has
// recorded steps (idemstore.Stepper, see steps.go): its data, from offset 99,
// is the steps, each a 4-byte big-endian name length, the name, a 4-byte
// data length and the data, in the order they were recorded. Its state
// is in_progress or released only: a completion or failure writes version
// 3 with its result in place of the steps. The scripts write version 3
// for a record without steps, so a store that does not know version 4
// refuses only the records of calls that recorded steps.
//
// Version 1 is version 3 without the claimed-at field: the result data
// starts at 91. Records written before records carried ClaimedAt are
// version 1; every store still reads them (ClaimedAt is the zero time,
// and stays zero for that ownership when a new store heartbeats or
// finishes it), and the scripts write version 3. A store that reads only
// versions 1 and 2 refuses a version-3 record as idem.ErrCorruptRecord
// (never overwriting it): upgrade every process sharing a prefix together.
//
// Version 2 is the version-1 layout for a fresh claim, which the client
// writes itself with one SET NX GET (no script, see Store.Claim) and so
// cannot stamp with the server's clock. Its state is in_progress and its
// three times are relative to the key's Redis expiry, which the server set
// by its own clock (PX = lease + TTL, rounded up to whole ms):
//
//	11     8    lease duration, µs
//	19     8    TTL after the lease, µs (the record expires that long after it)
//	27     8    0
//
// A reader turns them into server times with the key's PEXPIRETIME (an
// absolute server time, the same on every read): expiry = PEXPIRETIME +
// 1 ms, lease expiry = expiry - TTL, updated at = claimed at = lease
// expiry - lease. The extra millisecond covers the server's whole-ms clock
// at the SET, so a reader never sees the lease end before it does. The
// first script that writes the record (heartbeat, complete, fail, release,
// takeover) writes version 3, with that claimed at.
//
// The Lua scripts and decodeRecord below parse the same layout; a value that
// does not match it is reported as idem.ErrCorruptRecord and never
// overwritten. A future layout bumps the version byte, and a store that
// reads a version it does not know refuses it the same way.
const (
	recordMagic   = 0xA7
	recordVersion = 3
	legacyVersion = 1
	freshVersion  = 2
	stepsVersion  = 4
	// headerLen is the header of versions 1 and 2 (the fields every
	// version has, through the fingerprint); headerLenV3 adds claimed at.
	headerLen   = 91
	headerLenV3 = 99

	// maxFreshMicros bounds a fresh claim's lease and TTL (ten years): a
	// larger value is not one encodeFresh wrote.
	maxFreshMicros = 10 * 365 * 24 * 3600 * 1_000_000

	offState   = 2
	offFence   = 3
	offLease   = 11
	offExpiry  = 19
	offUpdate  = 27
	offOp      = 35
	offOwner   = 43
	offFP      = 59
	offClaimed = 91
)

// dataOffset is where a finished record's result starts in v, whose
// header the caller has checked is at least headerLen long; ok is false
// for a version-3 value too short for its header.
func dataOffset(v string) (off int, ok bool) {
	if v[1] == recordVersion || v[1] == stepsVersion {
		return headerLenV3, len(v) >= headerLenV3
	}
	return headerLen, true
}

// finishedVersion reports whether version byte b is one a finished record
// may have (written by a script: 1 before ClaimedAt, 3 since).
func finishedVersion(b byte) bool { return b == recordVersion || b == legacyVersion }

// decodeRecord parses a stored value. key is the caller's store key;
// expireAtMs, the key's PEXPIRETIME in ms (negative: the key has no
// expiry), places a fresh claim's relative times and is not read for
// other records. It judges a value exactly as the scripts' parse and the
// write script do, so that Claim, Get, List and the writes give one
// verdict on it.
func decodeRecord(key string, v string, expireAtMs int64) (idemstore.Record, error) {
	if len(v) < headerLen {
		return idemstore.Record{}, corrupt(key, fmt.Sprintf("value of %d bytes is shorter than the %d-byte header", len(v), headerLen))
	}
	if v[0] != recordMagic {
		return idemstore.Record{}, corrupt(key, fmt.Sprintf("not an idem record (first byte %#x)", v[0]))
	}
	if v[1] != recordVersion && v[1] != legacyVersion && v[1] != freshVersion && v[1] != stepsVersion {
		return idemstore.Record{}, corrupt(key, fmt.Sprintf("unsupported record encoding version %d", v[1]))
	}
	data, ok := dataOffset(v)
	if !ok {
		return idemstore.Record{}, corrupt(key, fmt.Sprintf("value of %d bytes is shorter than the %d-byte header", len(v), headerLenV3))
	}
	st := idemstore.State(v[offState])
	if st < idemstore.StateInProgress || st > idemstore.StateReleased || (v[1] == freshVersion && st != idemstore.StateInProgress) ||
		(v[1] == stepsVersion && st != idemstore.StateInProgress && st != idemstore.StateReleased) {
		return idemstore.Record{}, corrupt(key, fmt.Sprintf("unknown state %d", v[offState]))
	}
	r := idemstore.Record{
		Key:        key,
		State:      st,
		Fence:      be64(v, offFence),
		LeaseUntil: micros(be64(v, offLease)),
		ExpiresAt:  micros(be64(v, offExpiry)),
		UpdatedAt:  micros(be64(v, offUpdate)),
	}
	switch v[1] {
	case stepsVersion:
		steps, err := decodeSteps(key, v[headerLenV3:])
		if err != nil {
			return idemstore.Record{}, err
		}
		r.Steps = steps
		r.ClaimedAt = micros(be64(v, offClaimed))
	case recordVersion:
		r.ClaimedAt = micros(be64(v, offClaimed))
	case freshVersion:
		leaseUs, ttlUs := be64(v, offLease), be64(v, offExpiry)
		if leaseUs > maxFreshMicros || ttlUs > maxFreshMicros {
			return idemstore.Record{}, corrupt(key, fmt.Sprintf("fresh claim with a lease of %dµs and a TTL of %dµs", leaseUs, ttlUs))
		}
		if expireAtMs < 0 {
			// Its times are relative to a Redis expiry that is not there
			// (PERSIST, a RESTORE without TTL): no lease can be placed.
			return idemstore.Record{}, corrupt(key, "fresh claim without an expiry")
		}
		lease, ttl := time.Duration(leaseUs)*time.Microsecond, time.Duration(ttlUs)*time.Microsecond
		r.ExpiresAt = time.UnixMilli(expireAtMs).Add(time.Millisecond)
		r.LeaseUntil = r.ExpiresAt.Add(-ttl)
		r.UpdatedAt = r.LeaseUntil.Add(-lease)
		r.ClaimedAt = r.UpdatedAt
	}
	copy(r.Owner[:], v[offOwner:offFP])
	copy(r.Fingerprint[:], v[offFP:headerLen])
	if len(v) > data && v[1] != stepsVersion { // a version-4 record's data is its steps
		r.Result = []byte(v[data:])
	}
	return r, nil
}

// encodeRecord is the Go twin of the scripts' encoder (version 3), used by
// tests and tools that need to write a record by hand.
func encodeRecord(r idemstore.Record, op uint64) []byte {
	b := make([]byte, headerLenV3, headerLenV3+len(r.Result))
	b[0], b[1], b[offState] = recordMagic, recordVersion, byte(r.State)
	binary.BigEndian.PutUint64(b[offFence:], r.Fence)
	binary.BigEndian.PutUint64(b[offLease:], uint64(unixMicro(r.LeaseUntil)))
	binary.BigEndian.PutUint64(b[offExpiry:], uint64(unixMicro(r.ExpiresAt)))
	binary.BigEndian.PutUint64(b[offUpdate:], uint64(unixMicro(r.UpdatedAt)))
	binary.BigEndian.PutUint64(b[offOp:], op)
	copy(b[offOwner:], r.Owner[:])
	copy(b[offFP:], r.Fingerprint[:])
	binary.BigEndian.PutUint64(b[offClaimed:], uint64(unixMicro(r.ClaimedAt)))
	return append(b, r.Result...)
}

// unixMicro is t in µs, 0 for the zero time (which micros reads back).
func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// encodeFresh is the version-2 record of a fresh claim (see above) and
// the key's Redis TTL in whole milliseconds, rounded up.
func encodeFresh(owner idemstore.Token, fp idemstore.Fingerprint, op []byte, lease, ttl time.Duration) (v []byte, pxMillis int64) {
	b := make([]byte, headerLen)
	b[0], b[1], b[offState] = recordMagic, freshVersion, byte(idemstore.StateInProgress)
	binary.BigEndian.PutUint64(b[offFence:], 1)
	binary.BigEndian.PutUint64(b[offLease:], uint64(micro(lease)))
	binary.BigEndian.PutUint64(b[offExpiry:], uint64(micro(ttl)))
	copy(b[offOp:offOwner], op)
	copy(b[offOwner:], owner[:])
	copy(b[offFP:], fp[:])
	d := lease + ttl
	return b, int64((d + time.Millisecond - 1) / time.Millisecond)
}

func be64(v string, off int) uint64 {
	_ = v[off+7]
	return uint64(v[off])<<56 | uint64(v[off+1])<<48 | uint64(v[off+2])<<40 | uint64(v[off+3])<<32 |
		uint64(v[off+4])<<24 | uint64(v[off+5])<<16 | uint64(v[off+6])<<8 | uint64(v[off+7])
}

func micros(us uint64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(us))
}

func corrupt(key, why string) error {
	return fmt.Errorf("redisstore: %s: %w: %s", key, idem.ErrCorruptRecord, why)
}
