// Package p: results of standard library types that bring a marshaling
// pair or need one; every one must replay exactly (nil vs empty, float
// bits, precision).
package p

import (
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"time"
)

// Known holds one field of each type.
type Known struct {
	Raw      json.RawMessage
	IP       net.IP
	IPNet    net.IPNet
	Float    *big.Float
	FloatV   big.Float
	Int      *big.Int
	Rat      *big.Rat
	Addr     netip.Addr
	Prefix   netip.Prefix
	AddrPort netip.AddrPort
	Time     time.Time
	Dur      time.Duration
	Number   json.Number
	NullS    sql.NullString
	NullT    sql.NullTime
	NullF    sql.NullFloat64
	Null     sql.Null[int64]
	Level    slog.Level
	Header   http.Header
	URL      *url.URL
	URLV     url.URL
	OID      x509.OID
	PCG      rand.PCG
	ChaCha8  *rand.ChaCha8
	LevelVar *slog.LevelVar
}

// Values are what Get returns, by id.
var Values = map[string]Known{}

// Get returns Values[id].
//
//idem:ttl=1h
func Get(ctx context.Context, id string) (Known, error) {
	return Values[id], nil
}

// GetFloat returns a bare *big.Float.
//
//idem:ttl=1h
func GetFloat(ctx context.Context, f *big.Float) (*big.Float, error) {
	return f, nil
}

// GetIP returns a bare net.IP.
//
//idem:ttl=1h
func GetIP(ctx context.Context, ip net.IP) (net.IP, error) {
	return ip, nil
}

// GetURL returns a bare *url.URL.
//
//idem:ttl=1h
func GetURL(ctx context.Context, u string) (*url.URL, error) {
	return url.Parse(u)
}
