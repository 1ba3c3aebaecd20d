package firestorestore

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/stepkey"
)

// The record's fields (see the package documentation). Short names keep
// the documents compact: Firestore bills storage by field-name bytes too.
const (
	fVersion  = "v"
	fState    = "st"
	fOwner    = "ow"
	fFence    = "fe"
	fFP       = "fp"
	fResult   = "res"
	fLeaseDur = "ld"
	fTTLDur   = "td"
	fClaimed  = "ca"
	// fLeaseUntil is a finished record's last lease expiry (inspection
	// only; an in-progress record's runs from its update time).
	fLeaseUntil = "lu"
	fTTL        = "ttl"
	// fSteps is the map of recovery points, step name (see stepkey.Key) ->
	// bytes, of an in-progress or released record.
	fSteps = "sp"
)

// recordVersion is the record format's version (the v field). A document
// with another version, or none, is not a record this store can read.
const recordVersion = 1

// doc is a decoded record and the document's update time (the
// precondition of a write over it).
type doc struct {
	rec        idemstore.Record
	updateTime time.Time
}

// claimFields is the whole record a claim writes. It has no claim time:
// the claim's commit time is the document's update time, which the
// lease runs from, and the owner's next write records it in the ca field
// (a ServerTimestamp would be the server's request time, not the commit
// time). A record without ca has not been written since its claim.
func (s *Store) claimFields(req idemstore.ClaimRequest, fence uint64) map[string]any {
	return map[string]any{
		fVersion:  int64(recordVersion),
		fState:    int64(idemstore.StateInProgress),
		fOwner:    req.Owner[:],
		fFence:    int64(fence),
		fFP:       req.Fingerprint[:],
		fLeaseDur: int64(req.Lease),
		fTTLDur:   int64(req.TTL),
		fTTL:      s.ttlValue(req.Lease + req.TTL),
	}
}

// toUpdates turns claimFields into an Update list that overwrites the
// whole record (Set cannot take a precondition), removing an old result
// and, unless keepSteps (a retained record's call resumes), the steps.
func toUpdates(m map[string]any, keepSteps bool) []firestore.Update {
	u := make([]firestore.Update, 0, len(m)+4)
	u = append(u, firestore.Update{Path: fResult, Value: firestore.Delete}, firestore.Update{Path: fClaimed, Value: firestore.Delete},
		firestore.Update{Path: fLeaseUntil, Value: firestore.Delete})
	if !keepSteps {
		u = append(u, firestore.Update{Path: fSteps, Value: firestore.Delete})
	}
	for k, v := range m {
		u = append(u, firestore.Update{Path: k, Value: v})
	}
	return u
}

// decode reads a record document; anything missing or malformed is
// idem.ErrCorruptRecord (never treated as absent or overwritten).
func decode(key string, snap *firestore.DocumentSnapshot) (doc, error) {
	d, err := decodeLoose(snap)
	if err != nil {
		return doc{}, fmt.Errorf("%w: firestorestore: document %s for %q: %w", idem.ErrCorruptRecord, snap.Ref.ID, key, err)
	}
	d.rec.Key = key
	return d, nil
}

func decodeLoose(snap *firestore.DocumentSnapshot) (doc, error) {
	var d doc
	m := snap.Data()
	r := &d.rec
	v, err := intField(m, fVersion)
	if err != nil {
		return d, err
	}
	if v != recordVersion {
		return d, fmt.Errorf("record version %d, want %d", v, recordVersion)
	}
	st, err := intField(m, fState)
	if err != nil {
		return d, err
	}
	if st < int64(idemstore.StateInProgress) || st > int64(idemstore.StateReleased) {
		return d, fmt.Errorf("unknown state %d", st)
	}
	r.State = idemstore.State(st)
	if err := bytesField(m, fOwner, r.Owner[:]); err != nil {
		return d, err
	}
	if err := bytesField(m, fFP, r.Fingerprint[:]); err != nil {
		return d, err
	}
	fe, err := intField(m, fFence)
	if err != nil {
		return d, err
	}
	if fe <= 0 {
		return d, fmt.Errorf("fence %d is not positive", fe)
	}
	r.Fence = uint64(fe)
	ld, err := intField(m, fLeaseDur)
	if err != nil {
		return d, err
	}
	td, err := intField(m, fTTLDur)
	if err != nil {
		return d, err
	}
	if ld < 0 || td < 0 {
		return d, fmt.Errorf("negative lease %d or TTL %d", ld, td)
	}
	switch v := m[fResult].(type) {
	case nil:
	case []byte:
		if len(v) > 0 {
			r.Result = v
		}
	default:
		return d, fmt.Errorf("%s is %T, want bytes", fResult, v)
	}
	if r.Steps, err = decodeSteps(m); err != nil {
		return d, err
	}
	switch ca := m[fClaimed].(type) {
	case nil:
		r.ClaimedAt = snap.UpdateTime // not written since the claim
	case time.Time:
		r.ClaimedAt = ca
	default:
		return d, fmt.Errorf("%s is %T, want a timestamp", fClaimed, ca)
	}
	err = decodeTimes(&d, snap, m, ld, td)
	return d, err
}

// decodeTimes sets d's times: the lease and the retention run from the
// last write, by Firestore's clock (its update time), for ld and td.
func decodeTimes(d *doc, snap *firestore.DocumentSnapshot, m map[string]any, ld, td int64) error {
	r := &d.rec
	d.updateTime = snap.UpdateTime
	r.UpdatedAt = snap.UpdateTime
	if r.State == idemstore.StateInProgress {
		r.LeaseUntil = snap.UpdateTime.Add(time.Duration(ld))
		r.ExpiresAt = r.LeaseUntil.Add(time.Duration(td))
		return nil
	}
	r.ExpiresAt = snap.UpdateTime.Add(time.Duration(td))
	switch lu := m[fLeaseUntil].(type) {
	case nil:
	case time.Time:
		r.LeaseUntil = lu
	default:
		return fmt.Errorf("%s is %T, want a timestamp", fLeaseUntil, lu)
	}
	return nil
}

// decodeSteps reads the steps field: nil when it is absent or empty.
func decodeSteps(m map[string]any) (map[string][]byte, error) {
	var sp map[string]any
	switch v := m[fSteps].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		sp = v
	default:
		return nil, fmt.Errorf("%s is %T, want a map", fSteps, v)
	}
	return stepkey.Decode(sp, func(v any) ([]byte, bool) {
		b, ok := v.([]byte)
		return b, ok
	}, "bytes")
}

// maxFieldPath bounds a field path: Firestore allows 1,500 bytes, and
// its emulator refuses a path of exactly 1,500, so a step's path stays
// under it.
const maxFieldPath = 1500

// CheckStepName refuses a step name whose field path (sp.<name>, the
// name escaped as stepkey.Key does) Firestore could not take. The Guard calls
// it before the step's function runs (see idemstore.Stepper), so such a step
// never runs only to fail to be recorded.
func (s *Store) CheckStepName(name string) error {
	if n := len(fSteps) + 1 + len(stepkey.Key(name)); n >= maxFieldPath {
		return fmt.Errorf("firestorestore: a %d-byte step name makes a %d-byte field path (Firestore allows fewer than %d)", len(name), n, maxFieldPath)
	}
	return nil
}

// stepSize bounds what a step, by its map key and data length, adds to
// a document: the key (bytes + 1) and the value (its bytes), and a few
// bytes to spare.
func stepSize(key string, n int) int { return len(key) + 1 + n + 8 }

// stepsSize bounds what the steps field adds to a document, by each
// step's map key and data length.
func stepsSize(steps map[string]int) int {
	if len(steps) == 0 {
		return 0
	}
	size := len(fSteps) + 1
	for k, n := range steps {
		size += stepSize(k, n)
	}
	return size
}

// stepSizes is steps by map key and data length.
func stepSizes(steps map[string][]byte) map[string]int {
	if len(steps) == 0 {
		return nil
	}
	m := make(map[string]int, len(steps))
	for name, data := range steps {
		m[stepkey.Key(name)] = len(data)
	}
	return m
}

func intField(m map[string]any, name string) (int64, error) {
	v, ok := m[name].(int64)
	if !ok {
		if _, present := m[name]; present {
			return 0, fmt.Errorf("%s is %T, want an integer", name, m[name])
		}
		return 0, fmt.Errorf("no %s field", name)
	}
	return v, nil
}

func bytesField(m map[string]any, name string, dst []byte) error {
	v, ok := m[name].([]byte)
	if !ok {
		if _, present := m[name]; present {
			return fmt.Errorf("%s is %T, want bytes", name, m[name])
		}
		return fmt.Errorf("no %s field", name)
	}
	if len(v) != len(dst) {
		return fmt.Errorf("%s has %d bytes, want %d", name, len(v), len(dst))
	}
	copy(dst, v)
	return nil
}

// maxDocID is Firestore's limit on a document ID, in bytes.
const maxDocID = 1500

// docID is the document ID of key: "k" and the key with every byte
// outside [A-Za-z0-9:._-] percent-encoded. The encoding keeps prefixes
// (List finds a prefix's records by an ID range) and sorts like the key
// bytes; the "k" keeps IDs off the reserved ".", ".." and __name__ forms.
func docID(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: firestorestore: empty key", idem.ErrInvalidKey)
	}
	id := "k" + escape(key)
	if len(id) > maxDocID {
		return "", fmt.Errorf("%w: firestorestore: key %.40q... makes a %d-byte document ID (Firestore allows %d)",
			idem.ErrInvalidKey, key, len(id), maxDocID)
	}
	return id, nil
}

func escape(key string) string {
	var b strings.Builder
	b.Grow(len(key))
	for i := 0; i < len(key); i++ {
		c := key[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ':' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// keyOf inverts docID; ok is false for an ID docID does not make.
func keyOf(id string) (string, bool) {
	if !strings.HasPrefix(id, "k") || len(id) < 2 {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(id); i++ {
		c := id[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(id) {
			return "", false
		}
		v, err := strconv.ParseUint(id[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// docSize is an upper bound on the size Firestore counts for key's record
// holding an n-byte result: the document name (its path bytes + 16) and
// each field's name (bytes + 1) and value (integers and timestamps 8,
// bytes their length) plus 32.
func docSize(key string, n int) int {
	size := 3*len(key) + 1 + 16 + 512 // the escaped ID (at most 3 bytes per key byte) and the collection path's budget
	size += 32
	for _, f := range []string{fVersion, fState, fFence, fLeaseDur, fTTLDur, fClaimed, fTTL, fLeaseUntil} {
		size += len(f) + 1 + 8
	}
	size += len(fOwner) + 1 + len(idemstore.Token{})
	size += len(fFP) + 1 + len(idemstore.Fingerprint{})
	if n > 0 {
		size += len(fResult) + 1 + n
	}
	return size
}

// MaxResultSize is the largest result (encoded bytes) that key's record
// can hold within Firestore's document size limit.
func MaxResultSize(key string) int {
	return max(MaxDocumentSize-docSize(key, 1)+1, 0)
}
