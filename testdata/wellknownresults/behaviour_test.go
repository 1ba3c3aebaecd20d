package p

import (
	"bytes"
	"context"
	"crypto/x509"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"math/big"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// exact compares what go-cmp cannot see, strictly: big numbers by value,
// precision, mode and accuracy; floats by their bits; net.IP by its bytes
// and nil-ness (its Equal method calls nil and empty, and the 4- and
// 16-byte forms, equal); times by instant and zone offset.
var exact = cmp.Options{
	cmp.Comparer(sameFloat),
	cmp.Comparer(func(a, b big.Float) bool { return sameFloat(&a, &b) }),
	cmp.Comparer(func(a, b *big.Int) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0
	}),
	cmp.Comparer(func(a, b *big.Rat) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Cmp(b) == 0
	}),
	cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b }),
	cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }),
	cmp.Comparer(func(a, b net.IP) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }),
	cmp.Comparer(func(a, b time.Time) bool {
		_, ao := a.Zone()
		_, bo := b.Zone()
		return a.Equal(b) && ao == bo
	}),
	cmp.Comparer(func(a, b *rand.ChaCha8) bool { return sameState(a, b) }),
	cmp.Comparer(func(a, b rand.PCG) bool { return a == b }),
	cmp.Comparer(func(a, b *slog.LevelVar) bool {
		if a == nil || b == nil {
			return a == b
		}
		return a.Level() == b.Level()
	}),
	cmp.Comparer(func(a, b *url.Userinfo) bool {
		if a == nil || b == nil {
			return a == b
		}
		ap, aok := a.Password()
		bp, bok := b.Password()
		return a.Username() == b.Username() && ap == bp && aok == bok
	}),
}

// sameState compares generator states by their binary form.
func sameState[T interface {
	comparable
	MarshalBinary() ([]byte, error)
}](a, b T) bool {
	var zero T
	if a == zero || b == zero {
		return a == b
	}
	x, errA := a.MarshalBinary()
	y, errB := b.MarshalBinary()
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func sameFloat(a, b *big.Float) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Cmp(b) == 0 && a.Prec() == b.Prec() && a.Mode() == b.Mode() && a.Acc() == b.Acc() && a.Signbit() == b.Signbit()
}

func bigFloat(prec uint, mode big.RoundingMode, s string) *big.Float {
	f, _, err := big.ParseFloat(s, 0, prec, mode)
	if err != nil {
		panic(err)
	}
	return f
}

func TestWellKnownRoundTrip(t *testing.T) {
	// 200 bits of 1/3: its shortest decimal parsed at 64 bits is another number.
	third := new(big.Float).SetPrec(200).SetMode(big.ToZero).Quo(big.NewFloat(1).SetPrec(200), big.NewFloat(3).SetPrec(200))
	negZero := new(big.Float).SetPrec(100).Neg(new(big.Float).SetPrec(100))
	huge, _ := new(big.Int).SetString("-123456789012345678901234567890123456789", 10)
	berlin := time.FixedZone("CEST", 2*3600)
	lmt := time.FixedZone("LMT", 3208) // an offset of whole seconds
	tests := []struct {
		name string
		v    Known
	}{
		{"zero", Known{}},
		{"raw nil", Known{Raw: nil}},
		{"raw empty", Known{Raw: json.RawMessage{}}},
		{"raw null", Known{Raw: json.RawMessage("null")}},
		{"raw object", Known{Raw: json.RawMessage(`{"a": [1, 2]}`)}},
		{"ip empty", Known{IP: net.IP{}}},
		{"ip 4 bytes", Known{IP: net.IP{192, 0, 2, 1}}},
		{"ip 16 bytes v4", Known{IP: net.ParseIP("192.0.2.1")}},
		{"ip v6", Known{IP: net.ParseIP("2001:db8::1")}},
		{"ip odd length", Known{IP: net.IP{1, 2, 3}}},
		{"ipnet", Known{IPNet: net.IPNet{IP: net.IP{10, 0, 0, 0}, Mask: net.CIDRMask(8, 32)}}},
		{"float 200 bits", Known{Float: third, FloatV: *third}},
		{"float -0", Known{Float: negZero}},
		{"float inf", Known{Float: new(big.Float).SetInf(true)}},
		{"float zero value", Known{Float: new(big.Float)}},
		{"float mode", Known{Float: bigFloat(80, big.AwayFromZero, "2.5")}},
		{"int", Known{Int: huge}},
		{"int zero", Known{Int: new(big.Int)}},
		{"rat", Known{Rat: big.NewRat(-1, 3)}},
		{"rat zero value", Known{Rat: new(big.Rat)}},
		{"addr v4", Known{Addr: netip.MustParseAddr("192.0.2.1")}},
		{"addr v4 in v6", Known{Addr: netip.MustParseAddr("::ffff:192.0.2.1")}},
		{"addr zone", Known{Addr: netip.MustParseAddr("fe80::1%eth0")}},
		{"prefix unmasked", Known{Prefix: netip.PrefixFrom(netip.MustParseAddr("10.1.2.3"), 8)}},
		{"prefix invalid bits", Known{Prefix: netip.PrefixFrom(netip.MustParseAddr("10.1.2.3"), 33)}},
		{"addrport", Known{AddrPort: netip.MustParseAddrPort("[2001:db8::1]:443")}},
		{"time monotonic", Known{Time: time.Now()}},
		{"time zone", Known{Time: time.Date(2024, 5, 6, 7, 8, 9, 123456789, berlin)}},
		{"time seconds offset", Known{Time: time.Date(1890, 1, 1, 0, 0, 0, 1, lmt)}},
		{"time before year 1", Known{Time: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"duration", Known{Dur: -time.Nanosecond}},
		{"number", Known{Number: "1e400"}},
		{"null string", Known{NullS: sql.NullString{String: "", Valid: true}}},
		{"null time", Known{NullT: sql.NullTime{Time: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Valid: true}}},
		{"null float -0", Known{NullF: sql.NullFloat64{Float64: math.Copysign(0, -1), Valid: true}}},
		{"null generic", Known{Null: sql.Null[int64]{V: -1, Valid: true}}},
		{"level", Known{Level: slog.Level(-100)}},
		{"level named", Known{Level: slog.LevelWarn + 2}},
		{"header nil and empty values", Known{Header: http.Header{"A": nil, "B": {}, "C": {""}}}},
		{"header empty", Known{Header: http.Header{}}},
		{"url hand-built", Known{URL: &url.URL{Scheme: "HTTP", Host: "x", Path: "a b", RawPath: "a%20b"}}},
		{"url user no password", Known{URL: &url.URL{Scheme: "https", User: url.User("u"), Host: "h"}}},
		{"url empty password", Known{URLV: url.URL{User: url.UserPassword("u", ""), Opaque: "o", ForceQuery: true, OmitHost: true}}},
		{"url parsed", Known{URL: mustParse("https://u:p@h:8/a%2Fb?q=1#f%20g")}},
		{"oid", Known{OID: mustOID(1, 2, 840, 113549)}},
		{"pcg", Known{PCG: *rand.NewPCG(1, 2)}},
		{"chacha8", Known{ChaCha8: rand.NewChaCha8([32]byte{1, 2, 3})}},
		{"levelvar", Known{LevelVar: levelVar(-7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := idemSpecGet.Codec.Marshal(&tt.v)
			if err != nil {
				t.Fatal(err)
			}
			var got Known
			if err := idemSpecGet.Codec.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.v, got, exact); diff != "" {
				t.Errorf("decode(encode(v)) differs (-v +got):\n%s", diff)
			}
		})
	}
}

func mustOID(ints ...uint64) x509.OID {
	o, err := x509.OIDFromInts(ints)
	if err != nil {
		panic(err)
	}
	return o
}

func levelVar(l slog.Level) *slog.LevelVar {
	v := new(slog.LevelVar)
	v.Set(l)
	return v
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// A bare *big.Float result replays through the wrapper and a store with
// its precision.
func TestBigFloatReplays(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			api := NewIdempotent(ng.g)
			f := new(big.Float).SetPrec(200).Quo(big.NewFloat(2).SetPrec(200), big.NewFloat(3).SetPrec(200))
			first, err := api.GetFloat(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.GetFloat(context.Background(), f)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay, exact); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
		})
	}
}

// Records written while net.IP, big.Float and url.URL were stored by
// their marshaling pairs fail closed under the new codecs, never decode to another value.
func TestOldTextRecordsFailClosed(t *testing.T) {
	text := func(prefix []byte, s string) []byte {
		return append(append(append([]byte{idemimpl.CodecMarker, idemimpl.CodecVersion}, prefix...), 0x06, byte(len(s))), s...)
	}
	tests := []struct {
		name   string
		record []byte
		decode func([]byte) error
		want   error
	}{
		{"net.IP", text(nil, "1.2.3.4"), func(b []byte) error { var ip net.IP; return idemSpecGetIP.Codec.Unmarshal(b, &ip) }, idem.ErrResultIncompatible},
		{"empty net.IP", text(nil, ""), func(b []byte) error { var ip net.IP; return idemSpecGetIP.Codec.Unmarshal(b, &ip) }, idem.ErrResultIncompatible},
		{"*big.Float", text([]byte{0x01}, "0.6666666666666666667"), func(b []byte) error { var f *big.Float; return idemSpecGetFloat.Codec.Unmarshal(b, &f) }, idem.ErrCorruptRecord},
		{"*url.URL", text([]byte{0x01}, "https://h/p"), func(b []byte) error { var u *url.URL; return idemSpecGetURL.Codec.Unmarshal(b, &u) }, idem.ErrResultIncompatible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.decode(tt.record); !errors.Is(err, tt.want) {
				t.Errorf("decoding an old text record: %v, want %v", err, tt.want)
			}
		})
	}
}
