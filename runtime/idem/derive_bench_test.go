package idem_test

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// BenchmarkDerivationParts splits key derivation for the struct of
// bench_test.go's BenchmarkKeyDerivation into its parts, to show where its
// time goes: the encoding, SHA-256 of the encoded bytes, and the store key
// built from the hash (hash + hex + the key string's one allocation).
//
//	go test -run '^$' -bench DerivationParts -count 5 ./runtime/idem
func BenchmarkDerivationParts(b *testing.B) {
	items := []string{"sku-1", "sku-2", "sku-3"}
	meta := map[string]string{"channel": "web", "campaign": "autumn", "region": "eu-west"}
	at := time.Date(2026, 11, 22, 10, 30, 0, 0, time.UTC)
	encode := func(k *idemimpl.KeyBuilder) { // what idemgen emits for that struct
		k.String("cus_8f2a91")
		k.String("ord_1029384756")
		k.Int(129900)
		k.List(len(items))
		for _, e := range items {
			k.String(e)
		}
		k.MapStart(len(meta))
		for key, e := range meta {
			k.MapEntry()
			k.String(key)
			k.String(e)
		}
		k.MapEnd()
		k.Time(at)
		k.Float(0.21)
	}
	g := idem.NewGuard(memstore.New(), idem.WithKeyMemo(0))
	c, k := idemimpl.Begin(g, &idem.Spec{Name: "bench.Key"})
	encode(k.Key())
	material, _ := k.Key().Material()
	b.Run("encode", func(b *testing.B) {
		var k idemimpl.KeyBuilder
		for range b.N {
			k.Reset()
			encode(&k)
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.ReportMetric(float64(len(material)), "encoded-bytes")
		for range b.N {
			_ = sha256.Sum256(material)
		}
	})
	b.Run("hash_and_store_key", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			c.Derive()
		}
	})
}
