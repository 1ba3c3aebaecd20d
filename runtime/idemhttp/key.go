package idemhttp

import (
	"errors"
	"fmt"
	"net/textproto"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// MaxKeyLen is the longest accepted Idempotency-Key, in bytes after
// unquoting: the longest caller-supplied ID a Guard accepts.
const MaxKeyLen = idemimpl.MaxIDLen

// ParseKey parses the values of the Idempotency-Key header. The draft
// defines the field as a Structured Field sf-string (RFC 8941): a quoted
// string of printable ASCII where only \" and \\ are escapes. Many clients
// send a bare token (an unquoted UUID), so a bare value of visible ASCII
// without quotes, backslashes, commas or spaces is accepted too. The key
// must be 1 to MaxKeyLen bytes, and the header must appear once.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", errors.New("no Idempotency-Key header")
	case 1:
	default:
		return "", fmt.Errorf("%d Idempotency-Key headers; send exactly one", len(values))
	}
	v := textproto.TrimString(values[0])
	var key string
	if len(v) > 0 && v[0] == '"' {
		k, err := parseSFString(v)
		if err != nil {
			return "", err
		}
		key = k
	} else {
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' {
				return "", fmt.Errorf("byte %#02x at offset %d is not allowed in an unquoted key; send the key as a quoted string", c, i)
			}
		}
		key = v
	}
	switch {
	case key == "":
		return "", errors.New("the key is empty")
	case len(key) > MaxKeyLen:
		return "", fmt.Errorf("the key is %d bytes long; the limit is %d", len(key), MaxKeyLen)
	}
	return key, nil
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
