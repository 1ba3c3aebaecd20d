package idemhttp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func Example() {
	charges := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", func(w http.ResponseWriter, r *http.Request) {
		charges++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"charge":%d}`, charges)
	})

	mw, err := idemhttp.New(idem.NewGuard(memstore.New()),
		idemhttp.WithPrincipal(func(r *http.Request) (string, error) {
			return r.Header.Get("X-Account"), nil // from your authentication
		}))
	if err != nil {
		panic(err)
	}
	h := mw.Handler(mux)

	post := func(key, body string) {
		r := httptest.NewRequest("POST", "/charges", strings.NewReader(body))
		r.Header.Set("X-Account", "acct_1")
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Header().Get("Content-Type") == "application/problem+json" {
			// RFC 9457 problem details; "instance" differs every time.
			var p struct {
				Type, Title, Code string
				Retryable         bool
			}
			json.Unmarshal(w.Body.Bytes(), &p) //nolint:errcheck // printed below
			fmt.Println(w.Code, p.Code, p.Retryable, p.Title, p.Type)
			return
		}
		fmt.Println(w.Code, w.Header().Get("Idempotent-Replayed"), strings.TrimSpace(w.Body.String()))
	}
	post(`"k-1"`, `{"amount":5}`) // runs
	post(`"k-1"`, `{"amount":5}`) // a retry: replayed
	post(`"k-1"`, `{"amount":6}`) // the key reused for another request
	post("", `{"amount":5}`)      // no key
	fmt.Println("charges:", charges)
	// Output:
	// 201  {"charge":1}
	// 201 true {"charge":1}
	// 422 idempotency-key-reused false Idempotency-Key is already used https://www.ietf.org/archive/id/draft-ietf-httpapi-idempotency-key-header-07.html#section-2.7
	// 400 idempotency-key-missing false Idempotency-Key is missing https://www.ietf.org/archive/id/draft-ietf-httpapi-idempotency-key-header-07.html#section-2.7
	// charges: 1
}
