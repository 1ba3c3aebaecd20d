package impl

import "time"

// Material is the key material of one guarded call, which generated code
// writes between idemimpl.Begin and idem.Do: the key, the payload
// fingerprint when key= names a subset of the arguments, and an ordered
// function's entity and event time. Its memory is the Guard's, pooled:
// it is written only before the call is handed to Do.
type Material struct {
	key, payload, entity KeyBuilder
	hasPayload           bool
	at                   time.Time
}

// Key is the builder for the idempotency key: the key= paths, or every
// parameter but the context when key= is not given.
func (m *Material) Key() *KeyBuilder { return &m.key }

// Payload is the builder for the full payload when key= names a subset of
// it: a later call with the same key and another payload is refused.
// Without it the key is the fingerprint.
func (m *Material) Payload() *KeyBuilder {
	m.hasPayload = true
	return &m.payload
}

// Entity is the builder for the entity of an ordered function (order=).
func (m *Material) Entity() *KeyBuilder { return &m.entity }

// At sets the event time of an ordered function's call.
func (m *Material) At(t time.Time) { m.at = t }

// Parts returns what was written, for the Guard: the builders, whether a
// payload was written, and the event time.
func (m *Material) Parts() (key, payload, entity *KeyBuilder, hasPayload bool, at time.Time) {
	return &m.key, &m.payload, &m.entity, m.hasPayload, m.at
}

// Reset empties m for its next call, keeping its buffers.
func (m *Material) Reset() {
	m.key.Reset()
	m.payload.Reset()
	m.entity.Reset()
	m.hasPayload = false
	m.at = time.Time{}
}

// BeginCall is runtime/idem's unexported Guard.begin, a
// func(*idem.Guard, *idem.Spec) (idem.Call, *Material), which idem sets
// in its init and idemimpl.Begin calls: generated code starts its calls
// through idemimpl, so no signature of idem names Material.
var BeginCall any
