// Package sdk is a third-party SDK (written for this test) that the
// foreign case wraps without editing it: a payments-style function whose
// parameters embed the SDK's common Params (a context, the SDK's own
// idempotency key, unexported state), and a REST-style client method
// returning (T, *Response, error) where Response embeds *http.Response.
package sdk

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"
)

// Runs counts the calls that reached the SDK (the test's "server").
var Runs atomic.Int64

// Params is what every request of the SDK embeds.
type Params struct {
	Context        context.Context `json:"-"`
	IdempotencyKey *string
	Metadata       map[string]string
	extra          map[string]string
}

// SetExtra sets unexported state.
func (p *Params) SetExtra(k, v string) {
	if p.extra == nil {
		p.extra = map[string]string{}
	}
	p.extra[k] = v
}

// PaymentIntentParams are a payment intent's parameters.
type PaymentIntentParams struct {
	Params
	Amount   *int64
	Currency *string
}

// PaymentIntent is a payment intent.
type PaymentIntent struct {
	ID       string
	Amount   int64
	Currency string
	Created  time.Time
	Metadata map[string]string
	// LastError is what the SDK's API said about the last attempt; its
	// Go error is kept out of the SDK's JSON, as stripe-go keeps it.
	LastError *Error
}

// Error is an API error.
type Error struct {
	Code string
	Err  error `json:"-"`
}

// New creates a payment intent.
func New(ctx context.Context, params *PaymentIntentParams) (*PaymentIntent, error) {
	if params == nil || params.Amount == nil {
		return nil, errors.New("sdk: amount required")
	}
	n := Runs.Add(1)
	return &PaymentIntent{
		ID:        "pi_" + *params.IdempotencyKey,
		Amount:    *params.Amount + n - 1, // a second run would show
		Currency:  *params.Currency,
		Created:   time.Date(2026, 11, 25, 10, 0, 0, int(n), time.FixedZone("CET", 3600)),
		Metadata:  params.Metadata,
		LastError: &Error{Code: "authentication_required", Err: errors.New("3DS needed")},
	}, nil
}

// IssueRequest is what an issue is created from.
type IssueRequest struct {
	Title  *string
	Body   *string
	Labels []string
}

// Issue is an issue of a repository.
type Issue struct {
	Number int
	Title  string
	Labels []string
	Author *string
	URL    string
}

// Response is the client's response: the HTTP one and the rate limit.
type Response struct {
	*http.Response
	Remaining int
}

// IssuesService calls the issues API.
type IssuesService struct {
	BaseURL string
	runs    atomic.Int64
}

// Runs counts the calls that reached the service.
func (s *IssuesService) Runs() int64 { return s.runs.Load() }

// Create creates an issue.
func (s *IssuesService) Create(ctx context.Context, owner, repo string, req *IssueRequest) (*Issue, *Response, error) {
	n := s.runs.Add(1)
	var title string
	if req.Title != nil {
		title = *req.Title
	}
	return &Issue{Number: int(n), Title: title, Labels: req.Labels, URL: s.BaseURL + "/" + owner + "/" + repo},
		&Response{Response: &http.Response{StatusCode: 201, Header: http.Header{"X": {"y"}}}, Remaining: 4999}, nil
}

// Lock locks an issue's conversation.
func (s *IssuesService) Lock(ctx context.Context, owner, repo string, number int) error {
	s.runs.Add(1)
	return nil
}

// Get is not wrapped: IdempotentIssuesService promotes it.
func (s *IssuesService) Get(ctx context.Context, owner, repo string, number int) (*Issue, *Response, error) {
	return &Issue{Number: number}, &Response{Remaining: 4998}, nil
}
