package redisstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Recovery points (idemstore.Stepper). A call's steps live in its record's
// value, after the header (version 4, see record.go), so they share
// everything the record has without a second key: its hash slot, its
// Redis expiry, its deletion, the scripts' atomicity and the replica
// acknowledgements of WithReplicaAcks. The claim script returns them when
// it acquires a retained record (released) or takes over an expired lease,
// in the claim's own reply, and drops them when it makes the record anew;
// the SET NX GET of a fresh claim writes only where no record is retained,
// so it has none to drop. A heartbeat, a release and ForceRelease keep
// them; a completion or failure replaces them with its result.

var _ idemstore.Stepper = (*Store)(nil)

// MaxRecordBytes is the largest record the store writes with a step: 512
// MiB, the largest string value Redis holds. A step that would make its
// call's record larger is refused with idem.ErrResultTooLarge.
const MaxRecordBytes = 512 << 20

// stepScript records a step of the call in progress. KEYS[1] record;
// ARGV[1] packed '>I8' fence, op id (8 bytes), owner (16 bytes); ARGV[2]
// the step's name; ARGV[3] its data; ARGV[4] MaxRecordBytes. Returns {1}
// when the record holds the step (written now, or already: a step keeps
// its first data, and its record is then written again with this op id
// so that WithReplicaAcks confirms it), {-1, state, fence} when the
// caller does not own the key, {-2, size} when the record would be too
// large, {0, reason} for a record it cannot read.
var stepScript = redis.NewScript(luaCommon + `
local r, v = owned(KEYS[1], ARGV[1])
if not r then return v end
local name, data, steps, pos, found = ARGV[2], ARGV[3], r.steps, 1, false
while pos <= #steps do -- parse checked the entries
  local dpos = pos + 4 + struct.unpack('>I4', steps, pos)
  if string.sub(steps, pos + 4, dpos - 1) == name then found = true end
  pos = dpos + 4 + struct.unpack('>I4', steps, dpos)
end
if not found then
  local n = 99 + #steps + 8 + #name + #data
  if n > tonumber(ARGV[4]) then return {-2, n} end
  steps = steps .. struct.pack('>I4', #name) .. name .. struct.pack('>I4', #data) .. data
end
redis.call('SET', KEYS[1], enc(1, r.fence, r.lease, r.exp, now_us(), string.sub(ARGV[1], 9, 16), r.owner, r.fp,
  r.claimed, steps), 'KEEPTTL')
return {1}
`)

// CheckStepName refuses a step name that alone makes a record larger
// than the store writes. The Guard calls it before the step's function
// runs (see idemstore.Stepper).
func (s *Store) CheckStepName(name string) error {
	if n := headerLenV3 + 8 + len(name); n > s.maxRecord {
		return fmt.Errorf("redisstore: a %d-byte step name makes a record of %d bytes, the store writes records of %d at most", len(name), n, s.maxRecord)
	}
	return nil
}

// SaveStep implements idemstore.Stepper: one script, a compare-and-set on
// owner and fence like Complete, that appends the step to the record in
// progress. With WithReplicaAcks it returns only once n replicas have the
// step, retried as a completion is, so a recorded step is as durable as a
// recorded result.
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	const op = "step"
	if err := s.ready(ctx, op, l.Key); err != nil {
		return err
	}
	if n := headerLenV3 + 8 + len(name) + len(data); n > s.maxRecord {
		return s.stepTooLarge(name, l.Key, int64(n))
	}
	rk := s.RecordKey(l.Key)
	var arg [32]byte
	binary.BigEndian.PutUint64(arg[:], l.Fence)
	opID := s.op()
	copy(arg[8:16], opID)
	copy(arg[16:], l.Owner[:])
	apply := func(ctx context.Context) error { return s.applyStep(ctx, l, rk, arg[:], name, data) }
	if err := apply(ctx); err != nil || s.acks.n == 0 {
		return err
	}
	return s.ackWrite(ctx, op, l, rk, opID, true, apply) // acks.go
}

// applyStep runs stepScript once.
func (s *Store) applyStep(ctx context.Context, l idemstore.Lease, rk string, arg []byte, name string, data []byte) error {
	const op = "step"
	if data == nil {
		data = []byte{}
	}
	tooLarge := func(n int64) error { return s.stepTooLarge(name, l.Key, n) }
	res, code, err := s.runSized(ctx, op, l, stepScript, []string{rk}, tooLarge, arg, name, data, s.maxRecord)
	if err != nil || code == 1 {
		return err
	}
	return s.badReply(op, l.Key, res, nil)
}

// runSized is runFenced for a script that refuses a write past the
// record's size limit with {-2, size}: that reply is tooLarge(size).
func (s *Store) runSized(ctx context.Context, op string, l idemstore.Lease, script *redis.Script, keys []string, tooLarge func(int64) error, args ...any) (res []any, code int64, err error) {
	res, code, err = s.runFenced(ctx, op, l, script, keys, args...)
	if err == nil && code == -2 {
		n, _ := replyInt(res, 1)
		return nil, 0, tooLarge(n)
	}
	return res, code, err
}

// stepTooLarge is the error of a step that would make key's record n bytes.
func (s *Store) stepTooLarge(name, key string, n int64) error {
	return fmt.Errorf("redisstore: step %q of %s: %w: the record would be %d bytes, the store writes records of %d at most", name, key, idem.ErrResultTooLarge, n, s.maxRecord)
}

// decodeSteps parses the steps of a version-4 record: entries of a
// 4-byte big-endian name length, the name, a 4-byte data length, the data.
func decodeSteps(key string, b string) (map[string][]byte, error) {
	if b == "" {
		return nil, nil
	}
	steps := make(map[string][]byte)
	for len(b) > 0 {
		name, rest, ok := cutField(b)
		if !ok {
			return nil, corrupt(key, "malformed steps")
		}
		data, rest, ok := cutField(rest)
		if !ok {
			return nil, corrupt(key, "malformed steps")
		}
		steps[name] = []byte(data)
		b = rest
	}
	return steps, nil
}

// cutField cuts one length-prefixed field off the front of b.
func cutField(b string) (field, rest string, ok bool) {
	if len(b) < 4 {
		return "", "", false
	}
	n := uint64(binary.BigEndian.Uint32([]byte(b[:4])))
	if uint64(len(b)-4) < n {
		return "", "", false
	}
	return b[4 : 4+n], b[4+n:], true
}
