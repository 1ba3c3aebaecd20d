// Package idemhttp is net/http middleware for the Idempotency-Key request
// header (IETF draft "The Idempotency-Key HTTP Header Field"): a client
// sends a unique key with a non-idempotent request (POST, PATCH), and a
// retry with the same key gets the first request's response instead of
// running the handler again.
//
//	g := idem.NewGuard(store) // any idemstore.Store: memory, Redis, Postgres, file
//	mw, err := idemhttp.New(g,
//		idemhttp.WithPrincipal(func(r *http.Request) (string, error) {
//			return auth.ClientID(r.Context()) // who is calling
//		}),
//	)
//	if err != nil { ... }
//	http.ListenAndServe(addr, mw.Handler(mux))
//
// For each request whose method needs a key (POST and PATCH by default):
//
//   - no Idempotency-Key header (when required, the default) or a malformed
//     one: 400, application/problem+json;
//   - the first request with a key runs the handler; its status, headers and
//     body are recorded (the handler's writes are buffered, up to
//     WithMaxResponseBytes) and then sent;
//   - a retry with the same key and the same request fingerprint (method,
//     path and query, body, and the headers named by WithFingerprintHeaders)
//     gets the recorded status, headers and body byte for byte, plus the
//     header Idempotent-Replayed: true;
//   - a request with the same key while the first is still running: 409
//     with Retry-After;
//   - the same key with a different fingerprint: 422;
//   - the store unreachable: 503 with Retry-After (the handler does not run,
//     unless the Guard was built WithFailOpen);
//   - a request body over WithMaxRequestBytes: 413.
//
// Keys are scoped per client principal: the store key is derived from the
// principal returned by the WithPrincipal function and the key header, so
// client A's key can never replay client B's response. New refuses to
// build a middleware without a principal function unless WithoutPrincipal
// says that every caller shares one key space (a single-tenant service).
//
// A 5xx response is treated as a failure: it is sent to the client but not
// recorded, and the key is released so a retry runs the handler again
// (WithStore5xx records them instead). So are 408 and 429, which say the
// request was not processed; WithRecordIf sets the rule. A handler panic releases the key and
// is re-panicked for net/http to handle. The handler runs with a context
// that carries the claim's fence (idem.FenceFrom) and is canceled with cause
// idem.ErrLeaseLost if the lease is lost while it runs; it is not canceled
// when the client disconnects (unless WithClientCancel), because the client will
// retry and should then get the outcome of a request that ran to the end.
//
// A replay carries the recorded headers except hop-by-hop ones (never
// recorded nor sent) and per-client ones: Set-Cookie, Set-Cookie2,
// Authentication-Info and Proxy-Authentication-Info go to the first client
// only, so another client presenting the same key never receives its
// session (WithReplayedHeaders records them anyway). A status net/http
// cannot send (outside 100-999, as WriteHeader(0)) or a 101 is the
// handler's failure: 500, not recorded, key released.
//
// Handler buffers the response until the handler returns; a streamed
// response (Flush, server-sent events) goes behind StreamHandler, which
// records it a piece at a time and resumes a client from its
// Last-Event-ID. Hijack works behind neither.
//
// The middleware is built on idem.Guard and idem.Do: one idem.Spec per
// middleware (WithCall: idemcall.WithName, WithTTL, WithLease), the key = principal +
// Idempotency-Key, the payload fingerprint = the request fingerprint, and
// the result = the recorded response, encoded by the Guard's codec.
package idemhttp
