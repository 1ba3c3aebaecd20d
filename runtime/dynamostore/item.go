package dynamostore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/stepkey"
)

// The record's attribute names (see the package documentation).
const (
	aState      = "state"
	aOwner      = "owner"
	aFence      = "fence"
	aFP         = "fp"
	aResult     = "result"
	aLeaseUntil = "lease_until"
	aExpiresAt  = "expires_at"
	aUpdatedAt  = "updated_at"
	// aClaimedAt is optional: items written before records carried
	// ClaimedAt have none (a zero ClaimedAt).
	aClaimedAt = "claimed_at"
	// aSteps is the map of recovery points, step name -> binary result
	// (see stepkey.Key), of an in-progress or released record.
	aSteps = "steps"
)

var dataAttrs = []string{aState, aOwner, aFence, aFP, aResult, aLeaseUntil, aExpiresAt, aUpdatedAt, aClaimedAt, aSteps,
	aLastAt, aVersion}

const (
	stateInProgress = "in_progress"
	stateCompleted  = "completed"
	stateFailed     = "failed"
	stateReleased   = "released"
	// stateOrder marks an entity's order record (see Claim), which is no
	// idem record: decode refuses it.
	stateOrder = "order"
)

func stateAV(s idemstore.State) types.AttributeValue {
	switch s {
	case idemstore.StateInProgress:
		return avInProgress
	case idemstore.StateCompleted:
		return avCompleted
	case idemstore.StateFailed:
		return avFailed
	case idemstore.StateReleased:
		return avReleased
	}
	panic("dynamostore: no attribute value for state " + s.String())
}

func parseState(s string) (idemstore.State, bool) {
	switch s {
	case stateInProgress:
		return idemstore.StateInProgress, true
	case stateCompleted:
		return idemstore.StateCompleted, true
	case stateFailed:
		return idemstore.StateFailed, true
	case stateReleased:
		return idemstore.StateReleased, true
	}
	return idemstore.StateAbsent, false
}

// decode reads a record item; anything missing or malformed is
// idem.ErrCorruptRecord (never treated as absent).
func decode(key string, item map[string]types.AttributeValue) (idemstore.Record, error) {
	r, err := decodeLoose(item)
	if err != nil {
		return idemstore.Record{}, fmt.Errorf("%w: dynamostore: item for %q: %w", idem.ErrCorruptRecord, key, err)
	}
	r.Key = key
	return r, nil
}

func decodeLoose(item map[string]types.AttributeValue) (idemstore.Record, error) {
	var r idemstore.Record
	st, err := attrS(item, aState)
	if err != nil {
		return r, err
	}
	var ok bool
	if r.State, ok = parseState(st); !ok {
		return r, fmt.Errorf("unknown state %q", st)
	}
	owner, err := attrB(item, aOwner, len(r.Owner))
	if err != nil {
		return r, err
	}
	copy(r.Owner[:], owner)
	fp, err := attrB(item, aFP, len(r.Fingerprint))
	if err != nil {
		return r, err
	}
	copy(r.Fingerprint[:], fp)
	fe, err := attrN(item, aFence)
	if err != nil {
		return r, err
	}
	if r.Fence, err = strconv.ParseUint(fe, 10, 64); err != nil || r.Fence == 0 {
		return r, fmt.Errorf("fence %q is not a positive integer", fe)
	}
	for _, t := range []struct {
		name string
		dst  *time.Time
	}{{aLeaseUntil, &r.LeaseUntil}, {aExpiresAt, &r.ExpiresAt}, {aUpdatedAt, &r.UpdatedAt}} {
		v, err := attrN(item, t.name)
		if err != nil {
			return r, err
		}
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("%s %q is not Unix nanoseconds", t.name, v)
		}
		*t.dst = time.Unix(0, ns)
	}
	if _, ok := item[aClaimedAt]; ok {
		v, err := attrN(item, aClaimedAt)
		if err != nil {
			return r, err
		}
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return r, fmt.Errorf("%s %q is not Unix nanoseconds", aClaimedAt, v)
		}
		r.ClaimedAt = time.Unix(0, ns)
	}
	switch v := item[aResult].(type) {
	case nil:
	case *types.AttributeValueMemberB:
		if len(v.Value) > 0 {
			r.Result = v.Value
		}
	default:
		return r, fmt.Errorf("%s is %T, want binary", aResult, v)
	}
	if r.Steps, err = decodeSteps(item); err != nil {
		return r, err
	}
	return r, nil
}

// decodeSteps reads the steps attribute: nil when it is absent or empty.
func decodeSteps(item map[string]types.AttributeValue) (map[string][]byte, error) {
	var m map[string]types.AttributeValue
	switch v := item[aSteps].(type) {
	case nil:
		return nil, nil
	case *types.AttributeValueMemberM:
		m = v.Value
	default:
		return nil, fmt.Errorf("%s is %T, want a map", aSteps, v)
	}
	return stepkey.Decode(m, func(v types.AttributeValue) ([]byte, bool) {
		b, ok := v.(*types.AttributeValueMemberB)
		if !ok {
			return nil, false
		}
		return b.Value, true
	}, "binary")
}

// maxAttrName is DynamoDB's limit on an attribute name, a map key
// included: 64 KB.
const maxAttrName = 64 << 10

// CheckStepName refuses a step name DynamoDB could not take as a key of
// the steps map. The Guard calls it before the step's function runs (see
// idemstore.Stepper), so such a step never runs only to fail to be recorded.
func (s *Store) CheckStepName(name string) error {
	if n := len(stepkey.Key(name)); n > maxAttrName {
		return fmt.Errorf("dynamostore: a %d-byte step name makes a %d-byte map key (DynamoDB allows %d)", len(name), n, maxAttrName)
	}
	return nil
}

// stepSize is an upper bound on what the step name with data adds to the
// steps map: its key and value, and a few bytes of DynamoDB's overhead.
func stepSize(name string, data []byte) int { return len(stepkey.Key(name)) + len(data) + 4 }

func attrS(item map[string]types.AttributeValue, name string) (string, error) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", missing(item, name, "string")
	}
	return v.Value, nil
}

func attrN(item map[string]types.AttributeValue, name string) (string, error) {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return "", missing(item, name, "number")
	}
	return v.Value, nil
}

func attrB(item map[string]types.AttributeValue, name string, size int) ([]byte, error) {
	v, ok := item[name].(*types.AttributeValueMemberB)
	if !ok {
		return nil, missing(item, name, "binary")
	}
	if len(v.Value) != size {
		return nil, fmt.Errorf("%s has %d bytes, want %d", name, len(v.Value), size)
	}
	return v.Value, nil
}

func missing(item map[string]types.AttributeValue, name, kind string) error {
	if v, ok := item[name]; ok {
		return fmt.Errorf("%s is %T, want %s", name, v, kind)
	}
	return fmt.Errorf("no %s attribute", name)
}

// maxNumberSize bounds the stored size of any number the store writes.
// DynamoDB counts a number as about one byte per two significant digits
// plus one; 21 is its documented maximum.
const maxNumberSize = 21

// itemSize is an upper bound on the size DynamoDB counts for key's record
// holding a result of n bytes: the sum of attribute name lengths and value
// sizes (strings and binaries by their bytes, numbers at most 21 bytes).
func (s *Store) itemSize(key string, n int) int {
	l := s.layout
	size := len(l.pk) + len(l.prefix) + len(key)
	if l.sk != "" {
		size += len(l.sk) + len(l.skValue)
	}
	size += len(aState) + len(stateInProgress) // the longest state
	size += len(aOwner) + len(idemstore.Token{})
	size += len(aFP) + len(idemstore.Fingerprint{})
	size += len(aFence) + len(aLeaseUntil) + len(aExpiresAt) + len(aUpdatedAt) + len(aClaimedAt) + len(l.ttl) + 6*maxNumberSize
	if n > 0 {
		size += len(aResult) + n
	}
	return size
}

// MaxResultSize is the largest result (encoded bytes) that key's record
// can hold within DynamoDB's 400 KB item limit.
func (s *Store) MaxResultSize(key string) int {
	return max(MaxItemSize-s.itemSize(key, 1)+1, 0)
}
