// Package money is a fixture (written for these tests) whose types keep
// their state in unexported fields and expose it through marshalers.
package money

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Amount marshals to text (value receiver).
type Amount struct {
	cents    int64
	currency string
}

// New returns an amount.
func New(cents int64, currency string) Amount { return Amount{cents, currency} }

// MarshalText writes "123 EUR"; an amount without a currency fails.
func (a Amount) MarshalText() ([]byte, error) {
	if a.currency == "" {
		return nil, errors.New("money: no currency")
	}
	return []byte(strconv.FormatInt(a.cents, 10) + " " + a.currency), nil
}

// Token marshals to binary (pointer receiver).
type Token struct {
	id   uint64
	seen int // not part of its identity: MarshalBinary leaves it out
}

// NewToken returns a token.
func NewToken(id uint64, seen int) Token { return Token{id, seen} }

// MarshalBinary writes the id.
func (t *Token) MarshalBinary() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, t.id), nil
}
