package idemhttp_test

import (
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
	// 422  {"type":"about:blank","title":"Unprocessable Entity","status":422,"detail":"this Idempotency-Key was used with a different request (method, path, body or headers)","code":"idempotency-key-reused"}
	// 400  {"type":"about:blank","title":"Bad Request","status":400,"detail":"this operation requires an Idempotency-Key header","code":"idempotency-key-missing"}
	// charges: 1
}
