// Package idemseal seals idem's stored records with AES-256-GCM under a
// keyring: new records are sealed with the current key, and records sealed
// with an older key of the ring still open, so keys rotate without a
// migration. Give a Keyring to idem.WithSealer:
//
//	ring, err := idemseal.Parse(os.Getenv("IDEM_KEYRING")) // "2026-11:BASE64,2026-05:BASE64"
//	g := idem.NewGuard(store, idem.WithSealer(ring))
//
// A sealed record is the key's ID (one length byte, then the ID), a random
// 12-byte nonce and the ciphertext with its 16-byte tag. The Guard
// authenticates the record's envelope, function name and store key with
// it, so a record moved to another key does not open. Rotate a key well
// before it has sealed 2^32 records (random nonces: NIST SP 800-38D's
// bound), and keep an old key in the ring until every record it sealed has
// expired (the functions' ttl).
package idemseal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Key is one key of a Keyring: an ID stored with every record it seals
// (1 to 255 bytes, no ',' or ':', never reused for another secret) and a
// 32-byte secret.
type Key struct {
	ID     string
	Secret []byte
}

// Keyring seals with its current key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	current string
	aeads   map[string]cipher.AEAD
}

// New returns a Keyring that seals with current and also opens records
// sealed with older.
func New(current Key, older ...Key) (*Keyring, error) {
	k := &Keyring{current: current.ID, aeads: map[string]cipher.AEAD{}}
	for _, key := range append([]Key{current}, older...) {
		if key.ID == "" || len(key.ID) > 255 || strings.ContainsAny(key.ID, ",:") {
			return nil, fmt.Errorf("idemseal: key ID %q: want 1 to 255 bytes without ',' or ':'", key.ID)
		}
		if _, dup := k.aeads[key.ID]; dup {
			return nil, fmt.Errorf("idemseal: key ID %q given twice", key.ID)
		}
		if len(key.Secret) != 32 {
			return nil, fmt.Errorf("idemseal: key %q: the secret is %d bytes, want 32 (AES-256)", key.ID, len(key.Secret))
		}
		block, err := aes.NewCipher(key.Secret)
		if err != nil {
			return nil, err
		}
		if k.aeads[key.ID], err = cipher.NewGCM(block); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// Parse reads a keyring written as "ID:SECRET[,ID:SECRET…]", each SECRET
// 32 bytes in standard base64, the first key the current one: the form of
// an environment variable or a secret file (surrounding space is ignored).
func Parse(s string) (*Keyring, error) {
	var keys []Key
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		id, secret, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, errors.New("idemseal: a keyring is ID:BASE64SECRET[,ID:BASE64SECRET…]")
		}
		raw, err := base64.StdEncoding.DecodeString(secret)
		if err != nil {
			return nil, fmt.Errorf("idemseal: key %q: its secret is not base64: %w", id, err)
		}
		keys = append(keys, Key{ID: id, Secret: raw})
	}
	return New(keys[0], keys[1:]...)
}

// Seal implements idem.Sealer with the current key.
func (k *Keyring) Seal(plaintext, ad []byte) ([]byte, error) {
	aead := k.aeads[k.current]
	out := make([]byte, 1+len(k.current)+aead.NonceSize(), 1+len(k.current)+aead.NonceSize()+len(plaintext)+aead.Overhead())
	out[0] = byte(len(k.current))
	copy(out[1:], k.current)
	nonce := out[1+len(k.current):]
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(out, nonce, plaintext, ad), nil
}

// ErrUnknownKey is Open's error for a record sealed with a key the ring
// does not hold.
var ErrUnknownKey = errors.New("idemseal: sealed with a key this keyring does not hold")

// Open implements idem.Sealer with the key the record names.
func (k *Keyring) Open(sealed, ad []byte) ([]byte, error) {
	if len(sealed) < 1 || len(sealed) < 1+int(sealed[0]) {
		return nil, errors.New("idemseal: truncated record")
	}
	id := string(sealed[1 : 1+int(sealed[0])])
	aead, ok := k.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w (%q)", ErrUnknownKey, id)
	}
	rest := sealed[1+len(id):]
	if len(rest) < aead.NonceSize()+aead.Overhead() {
		return nil, errors.New("idemseal: truncated record")
	}
	return aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], ad)
}
