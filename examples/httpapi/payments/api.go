package payments

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Authenticate returns the account an API key belongs to. The example's
// API keys are "sk_test_<account>"; a real service looks the key up. It is
// both the middleware's principal function and the handler's source of
// the account, so the key space and the data are scoped alike.
func Authenticate(r *http.Request) (string, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", errors.New("missing bearer API key")
	}
	account, ok := strings.CutPrefix(token, "sk_test_")
	if !ok || account == "" {
		return "", errors.New("unknown API key")
	}
	return account, nil
}

// API is the HTTP surface of the payments service.
type API struct {
	svc *IdempotentService
}

// NewAPI serves svc. Put idemhttp's middleware in front of the handler it
// returns.
func NewAPI(svc *IdempotentService) *API { return &API{svc: svc} }

// Routes returns the API's handler:
//
//	POST /payments       {"reference", "amount", "currency"} → 201 Payment
//	GET  /payments/{id}  → 200 Payment
//	GET  /healthz        → 200
func (a *API) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", a.create)
	mux.HandleFunc("GET /payments/{id}", a.get)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	return mux
}

type createRequest struct {
	Reference string `json:"reference"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	account, err := Authenticate(r)
	if err != nil {
		problem(w, http.StatusUnauthorized, err.Error())
		return
	}
	var in createRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		problem(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	p, err := a.svc.CreatePayment(r.Context(), PaymentRequest{
		AccountID: account, Reference: in.Reference, Amount: in.Amount, Currency: in.Currency,
	})
	switch {
	case err == nil:
		w.Header().Set("Location", "/payments/"+p.ID)
		writeJSON(w, http.StatusCreated, p)
	case errors.Is(err, ErrInvalid):
		problem(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, idem.ErrPayloadMismatch):
		problem(w, http.StatusUnprocessableEntity,
			fmt.Sprintf("reference %q was already used for a different payment", in.Reference))
	case errors.Is(err, idem.ErrInProgress):
		// Another request for this reference is still charging. Answer
		// with a status the middleware does not record (5xx), so that the
		// client's retry runs again instead of replaying "busy".
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusServiceUnavailable, "a payment with this reference is being processed; retry later")
	default:
		problem(w, http.StatusInternalServerError, "payment failed: "+err.Error())
	}
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	account, err := Authenticate(r)
	if err != nil {
		problem(w, http.StatusUnauthorized, err.Error())
		return
	}
	p, err := a.svc.Get(r.Context(), account, r.PathValue("id"))
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, p)
	case errors.Is(err, pgx.ErrNoRows):
		problem(w, http.StatusNotFound, "no such payment")
	default:
		problem(w, http.StatusInternalServerError, err.Error())
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck
}

func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck
		"type": "about:blank", "title": http.StatusText(status), "status": status, "detail": detail,
	})
}
