// Package idemkey reads, checks and mints the value of an idempotency key
// as clients send it: the Idempotency-Key HTTP header (IETF draft "The
// Idempotency-Key HTTP Header Field") and the idempotency-key gRPC
// metadata entry, which follows the same rules. runtime/idemhttp and
// runtime/idemgrpc use it on both sides: servers Parse what arrives,
// clients send New keys written by Format.
package idemkey

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/textproto"
	"strconv"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// MaxLen is the longest accepted key, in bytes after unquoting:
// idemimpl.MaxIDLen.
const MaxLen = idemimpl.MaxIDLen

// Parse parses the values of the key's header (or metadata entry). The
// draft defines the field as a Structured Field sf-string (RFC 8941): a
// quoted string of printable ASCII where only \" and \\ are escapes. Many
// clients send a bare token (an unquoted UUID), so a bare value of visible
// ASCII without quotes, backslashes, commas or spaces is accepted too. The
// key must be 1 to MaxLen bytes, and the header must appear once.
func Parse(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", errors.New("no Idempotency-Key header")
	case 1:
	default:
		return "", fmt.Errorf("%d Idempotency-Key headers; send exactly one", len(values))
	}
	v := textproto.TrimString(values[0])
	key := v
	if len(v) > 0 && v[0] == '"' {
		k, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		key = k
	} else if err := checkBare(v); err != nil {
		return "", err
	}
	switch {
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxLen:
		return "", fmt.Errorf("the key is %d bytes long; the limit is %d", len(key), MaxLen)
	}
	return key, nil
}

// checkBare checks an unquoted key: visible ASCII but for the bytes an
// sf-string or a list would give a meaning.
func checkBare(v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
			return fmt.Errorf("byte %#02x at offset %d is not allowed in an unquoted key; send the key as a quoted string", c, i)
		}
	}
	return nil
}

// parseSFString parses an RFC 8941 sf-string that makes up the whole value.
func parseSFString(v string) (string, error) {
	// The common case, no escapes: the key is a substring, no copy.
	if len(v) >= 2 && v[len(v)-1] == '"' {
		plain := true
		for i := 1; i < len(v)-1 && plain; i++ {
			c := v[i]
			plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
		}
		if plain {
			return v[1 : len(v)-1], nil
		}
	}
	b := make([]byte, 0, len(v))
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", fmt.Errorf("invalid escape at offset %d: only \\\" and \\\\ are allowed", i-1)
			}
			b = append(b, v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", fmt.Errorf("unexpected data after the closing quote at offset %d", i)
			}
			return string(b), nil
		case c < 0x20 || c >= 0x7f:
			return "", fmt.Errorf("byte %#02x at offset %d is not printable ASCII", c, i)
		default:
			b = append(b, c)
		}
	}
	return "", errors.New("missing closing quote")
}

// New returns a fresh random key: a version 4 UUID (122 random bits), as
// the draft recommends.
func New() string {
	var u [16]byte
	rand.Read(u[:]) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Format returns key as the header's value: an RFC 8941 sf-string
// (quoted, with \ and " escaped), the draft's syntax.
func Format(key string) string {
	return strconv.Quote(key) // printable ASCII keys quote the same in Go and RFC 8941
}
