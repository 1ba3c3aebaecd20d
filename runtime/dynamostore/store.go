package dynamostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/internal/replayhint"
	"github.com/idemgen/idemgen/runtime/internal/stepkey"
)

// API is the part of the DynamoDB client the store uses. *dynamodb.Client
// implements it; so can a wrapper (tracing, DAX).
type API interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// ErrItemTooLarge: a result does not fit in a DynamoDB item (400 KB). The
// store returns it from Complete and Fail before sending anything. It wraps
// idem.ErrResultTooLarge, on which the Guard records the call as failed so
// that duplicates do not run the function again.
var ErrItemTooLarge = fmt.Errorf("dynamostore: record exceeds DynamoDB's 400 KB item limit: %w", idem.ErrResultTooLarge)

// MaxItemSize is DynamoDB's item size limit in bytes (400 KB).
const MaxItemSize = 400 * 1024

// Store is an idemstore.Store on a DynamoDB table. It is safe for concurrent use.
type Store struct {
	api    API
	table  *string
	layout layout
	now    func() time.Time
	skew   time.Duration
	// Wait's polling: first interval, cap.
	pollMin, pollMax time.Duration
	cleanupLimit     int

	// Expression attribute names per operation: DynamoDB rejects names an
	// expression does not use, so each operation has its own map. They are
	// only read after New.
	claimNames, fencedNames, finishNames, releaseNames, stepNames, deleteNames map[string]string

	hint      replayhint.Recent // keys claimed lately: a claim of one reads first (replay.go)
	readFirst replayhint.Mode   // overrides the hint in benchmarks
}

type layout struct {
	pk, sk, skValue, prefix, ttl string
}

// Option configures a Store (and CreateTable, which reads the layout ones).
type Option func(*config)

type config struct {
	layout  layout
	now     func() time.Time
	skew    time.Duration
	pollMin time.Duration
	pollMax time.Duration
	// cleanupLimit bounds the items one Cleanup deletes.
	cleanupLimit int
}

// WithPartitionKey names the table's partition key attribute (type S;
// default "pk").
func WithPartitionKey(name string) Option { return func(c *config) { c.layout.pk = name } }

// WithSortKey stores every record under the sort key attribute name (type
// S) with the static value value, for tables shared with other items
// (single-table designs). Without it the table must have no sort key.
func WithSortKey(name, value string) Option {
	return func(c *config) { c.layout.sk, c.layout.skValue = name, value }
}

// WithKeyPrefix prepends prefix to every idem key in the partition key
// value ("IDEM#" keeps the records apart from other entities' items).
func WithKeyPrefix(prefix string) Option { return func(c *config) { c.layout.prefix = prefix } }

// WithTTLAttribute names the number attribute that holds the Unix time (in
// seconds) after which DynamoDB's time to live may delete the item
// (default "ttl"). Enable time to live on the table for this attribute.
func WithTTLAttribute(name string) Option { return func(c *config) { c.layout.ttl = name } }

// WithClock replaces time.Now as the store's clock (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithSkewMargin sets how much clock skew between callers the store
// tolerates (default 1s): a lease is taken over only once the claimer's
// clock is past lease expiry + margin. See the package documentation.
func WithSkewMargin(d time.Duration) Option { return func(c *config) { c.skew = d } }

// WithPollInterval sets Wait's first polling interval and the cap it backs
// off to (defaults 20ms and 500ms).
func WithPollInterval(first, max time.Duration) Option {
	return func(c *config) { c.pollMin, c.pollMax = first, max }
}

// DefaultSkewMargin is the clock skew tolerated unless WithSkewMargin says
// otherwise.
const DefaultSkewMargin = time.Second

func newConfig(opts []Option) (config, error) {
	c := config{
		layout:  layout{pk: "pk", ttl: "ttl"},
		now:     time.Now,
		skew:    DefaultSkewMargin,
		pollMin: 20 * time.Millisecond,
		pollMax: 500 * time.Millisecond,

		cleanupLimit: DefaultCleanupLimit,
	}
	for _, o := range opts {
		o(&c)
	}
	l := c.layout
	switch {
	case l.pk == "":
		return c, errors.New("dynamostore: empty partition key name")
	case l.ttl == "":
		return c, errors.New("dynamostore: empty TTL attribute name")
	case l.sk != "" && l.skValue == "":
		return c, fmt.Errorf("dynamostore: sort key %q needs a non-empty static value", l.sk)
	case l.sk == l.pk:
		return c, fmt.Errorf("dynamostore: partition and sort key are both %q", l.pk)
	case c.skew < 0:
		return c, fmt.Errorf("dynamostore: negative skew margin %v", c.skew)
	case c.pollMin <= 0 || c.pollMax < c.pollMin:
		return c, fmt.Errorf("dynamostore: poll interval %v..%v is not a positive range", c.pollMin, c.pollMax)
	case c.now == nil:
		return c, errors.New("dynamostore: nil clock")
	case c.cleanupLimit <= 0:
		return c, fmt.Errorf("dynamostore: cleanup limit %d is not positive", c.cleanupLimit)
	}
	for _, name := range []string{l.pk, l.sk, l.ttl} {
		if name == "" {
			continue
		}
		for _, a := range dataAttrs {
			if name == a {
				return c, fmt.Errorf("dynamostore: attribute name %q is used by the store's records", name)
			}
		}
	}
	if l.ttl == l.pk || l.ttl == l.sk {
		return c, fmt.Errorf("dynamostore: TTL attribute %q is also a key", l.ttl)
	}
	return c, nil
}

// New returns a store on table through api (a *dynamodb.Client configured
// by the caller; see CreateTable for the table). It checks that the table
// answers with one GetItem (of a key no record uses), bounded by ctx and
// not retried, so an unreachable endpoint, bad credentials or a missing
// table fail here, with an error wrapping idem.ErrStoreUnavailable and the
// cause, instead of on the first call. The store keeps no reference to
// ctx.
func New(ctx context.Context, api API, table string, opts ...Option) (*Store, error) {
	s, err := build(api, table, opts)
	if err != nil {
		return nil, err
	}
	_, err = s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: s.itemKey(probeKey)},
		func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		// The SDK's message names the operation, the endpoint and the
		// cause; the table is in the request, not in the message.
		return nil, fmt.Errorf("dynamostore: %w: table %s: %w", idem.ErrStoreUnavailable, table, err)
	}
	return s, nil
}

// probeKey is the idem key New reads: no Guard makes a key without a
// function name and version, so no record is ever stored under it.
const probeKey = "\x00idem-reachability-probe"

// build is New without the round trip.
func build(api API, table string, opts []Option) (*Store, error) {
	if api == nil {
		return nil, errors.New("dynamostore: nil client")
	}
	if table == "" {
		return nil, errors.New("dynamostore: empty table name")
	}
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		api: api, table: aws.String(table), layout: c.layout, now: c.now, skew: c.skew,
		pollMin: c.pollMin, pollMax: c.pollMax, cleanupLimit: c.cleanupLimit,
	}
	l := c.layout
	s.claimNames = map[string]string{"#pk": l.pk, "#st": aState, "#ow": aOwner, "#fe": aFence, "#fp": aFP,
		"#res": aResult, "#lu": aLeaseUntil, "#ex": aExpiresAt, "#up": aUpdatedAt, "#ca": aClaimedAt, "#ttl": l.ttl,
		"#sp": aSteps}
	s.fencedNames = map[string]string{"#st": aState, "#ow": aOwner, "#fe": aFence,
		"#lu": aLeaseUntil, "#ex": aExpiresAt, "#up": aUpdatedAt, "#ttl": l.ttl}
	s.releaseNames = map[string]string{"#st": aState, "#ow": aOwner, "#fe": aFence,
		"#res": aResult, "#ex": aExpiresAt, "#up": aUpdatedAt, "#ttl": l.ttl}
	s.finishNames = map[string]string{"#st": aState, "#ow": aOwner, "#fe": aFence,
		"#res": aResult, "#ex": aExpiresAt, "#up": aUpdatedAt, "#ttl": l.ttl, "#sp": aSteps}
	s.stepNames = map[string]string{"#st": aState, "#ow": aOwner, "#fe": aFence, "#sp": aSteps}
	s.deleteNames = map[string]string{"#pk": l.pk}
	return s, nil
}

// The update and condition expressions. A claim succeeds when the item is
// absent or past its retention (finished or released: its expiry; in
// progress: its expiry plus the skew margin, :tko = now - margin, so an
// abandoned record is never forgotten while a skewed owner may still hold
// its lease), or, with the item's own fingerprint, retained and released
// or in progress with a lease expired by more than the margin. A live item
// keeps its first claim's fingerprint in every state: another payload can
// neither take over a crashed owner's lease nor run after a release. The
// claim bumps the fence whatever was there, so fences never repeat while
// the item exists.
//
// A claim keeps the item's steps (making an empty map where there is
// none, for SaveStep's nested path), and the old item it returns carries
// them: the one round trip resumes a retained record's call. It must not
// hand them to a new call, so claimCond lets a claim over an item past
// its retention through only when the item has no steps; over one with
// steps (an abandoned or released call's, left until DynamoDB's time to
// live removes the item) the claim fails, and the store claims again with
// claimAnewCond and claimAnewSet, which empty the map.
const (
	deadCond  = "((#st <> :inp AND #ex <= :now) OR (#st = :inp AND #ex <= :tko))"
	claimCond = "attribute_not_exists(#pk) OR (" + deadCond + " AND (attribute_not_exists(#sp) OR size(#sp) = :zero)) OR " +
		"(#fp = :fp AND ((#st = :rel AND #ex > :now) OR (#st = :inp AND #lu <= :tko AND #ex > :tko)))"
	claimSetCommon = "SET #st = :inp, #ow = :ow, #fp = :fp, #lu = :lu, #ex = :ex, #up = :now, #ca = :now, #ttl = :ttl, " +
		"#fe = if_not_exists(#fe, :zero) + :one, "
	claimSet      = claimSetCommon + "#sp = if_not_exists(#sp, :nosteps) REMOVE #res"
	claimAnewCond = "attribute_not_exists(#pk) OR " + deadCond
	claimAnewSet  = claimSetCommon + "#sp = :nosteps REMOVE #res"
	ownedCond     = "#st = :inp AND #ow = :ow AND #fe = :fe"
	heartbeatSet  = "SET #lu = :lu, #ex = :ex, #up = :now, #ttl = :ttl"
	// A completion or failure drops the steps: the result replays from
	// then on. A release keeps them for the call's next run.
	finishSet = "SET #st = :st, #res = :res, #ex = :ex, #up = :now, #ttl = :ttl REMOVE #sp"
	// An empty result is stored as no attribute (and read back as nil,
	// as the memory store does).
	finishSetEmpty  = "SET #st = :st, #ex = :ex, #up = :now, #ttl = :ttl REMOVE #res, #sp"
	releaseSetEmpty = "SET #st = :st, #ex = :ex, #up = :now, #ttl = :ttl REMOVE #res"
	// A step keeps its first record.
	stepSet    = "SET #sp.#n = if_not_exists(#sp.#n, :d)"
	deleteCond = "attribute_exists(#pk)"
)

var (
	avInProgress = &types.AttributeValueMemberS{Value: stateInProgress}
	avReleased   = &types.AttributeValueMemberS{Value: stateReleased}
	avCompleted  = &types.AttributeValueMemberS{Value: stateCompleted}
	avFailed     = &types.AttributeValueMemberS{Value: stateFailed}
	avZero       = &types.AttributeValueMemberN{Value: "0"}
	avOne        = &types.AttributeValueMemberN{Value: "1"}
	avNoSteps    = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
)

func nanos(t time.Time) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixNano(), 10)}
}

func uintN(v uint64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatUint(v, 10)}
}

// ttlAttr is the time-to-live value for a record live until ex: whole
// seconds, rounded up, plus the skew margin so DynamoDB never deletes an
// item a skewed caller still counts as live.
func (s *Store) ttlAttr(ex time.Time) *types.AttributeValueMemberN {
	t := ex.Add(s.skew)
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(sec, 10)}
}

func (s *Store) itemKey(key string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{s.layout.pk: &types.AttributeValueMemberS{Value: s.layout.prefix + key}}
	if s.layout.sk != "" {
		k[s.layout.sk] = &types.AttributeValueMemberS{Value: s.layout.skValue}
	}
	return k
}

// takeoverable reports whether an in-progress lease may be taken over at now.
func (s *Store) takeoverable(r *idemstore.Record, now time.Time) bool {
	return !now.Before(r.LeaseUntil.Add(s.skew))
}

// retained mirrors claimCond's retention: whether r still holds its key
// (and its fingerprint) for a claim at now.
func (s *Store) retained(r *idemstore.Record, now time.Time) bool {
	if r.State == idemstore.StateInProgress {
		return now.Before(r.ExpiresAt.Add(s.skew))
	}
	return live(r, now)
}

// live mirrors the memory store: a record counts until ExpiresAt (for an
// in-progress record, lease + TTL, so a crashed owner's fence is kept).
func live(r *idemstore.Record, now time.Time) bool { return now.Before(r.ExpiresAt) }

// attempts counts the HTTP attempts of one operation (the SDK retries), so
// a conflict can be recognised as this call's own earlier attempt.
type attempts struct{ n atomic.Int32 }

func (a *attempts) option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		m := middleware.FinalizeMiddlewareFunc("idemAttemptCount", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			a.n.Add(1)
			return next.HandleFinalize(ctx, in)
		})
		if err := st.Finalize.Insert(m, "Retry", middleware.After); err != nil {
			return st.Finalize.Add(m, middleware.After)
		}
		return nil
	})
}

func (a *attempts) retried() bool { return a.n.Load() > 1 }

// opError wraps an SDK error: a ctx error as itself (the caller gave up),
// anything else as idem.ErrStoreUnavailable.
func (s *Store) opError(ctx context.Context, op, key string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("dynamostore: %s %q: %w (%v)", op, key, cerr, err)
	}
	return fmt.Errorf("%w: dynamostore: %s %q in table %s: %w", idem.ErrStoreUnavailable, op, key, *s.table, err)
}

// maxClaimRounds bounds a claim's retries when the item changes between a
// failed condition and the read that explains it (servers without
// ReturnValuesOnConditionCheckFailure only).
const maxClaimRounds = 4

// Claim is one conditional UpdateItem. See idemstore.Store.
func (s *Store) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return idemstore.ClaimResult{}, err
	}
	if err := s.checkKey(req.Key); err != nil {
		return idemstore.ClaimResult{}, err
	}
	if req.Order.Key != "" {
		return s.claimOrdered(ctx, req) // order.go
	}
	key := s.itemKey(req.Key)
	if s.readFirst.ReadsFirst(&s.hint, req.Key) {
		if res, ok, err := s.replay(ctx, req, key); ok || err != nil {
			return res, err
		}
	}
	res, err := s.claim(ctx, req, key)
	if err == nil {
		s.hint.Note(req.Key, res.Status)
	}
	return res, err
}

// claim is Claim's conditional UpdateItem, repeated until it settles.
func (s *Store) claim(ctx context.Context, req idemstore.ClaimRequest, key map[string]types.AttributeValue) (idemstore.ClaimResult, error) {
	// anew: the last round found the item past its retention with steps
	// (see claimCond): claim it with claimAnewCond, dropping them.
	anew := false
	for round := 1; ; round++ {
		now := s.now()
		lu := now.Add(req.Lease)
		ex := lu.Add(req.TTL)
		vals := claimValues(req, now, lu, ex, s)
		cond, set := claimCond, claimSet
		if anew {
			cond, set = claimAnewCond, claimAnewSet
			delete(vals, ":rel") // DynamoDB refuses values an expression does not use
		}
		var att attempts
		out, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 s.table,
			Key:                       key,
			UpdateExpression:          aws.String(set),
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  s.claimNames,
			ExpressionAttributeValues: vals,
			// The old item tells acquired from taken over and gives the
			// old fence (the new one is old + 1) and a retained record's
			// steps.
			ReturnValues:                        types.ReturnValueAllOld,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}, att.option)
		if err == nil {
			return s.acquired(req, out.Attributes, now, lu, anew)
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return idemstore.ClaimResult{}, s.opError(ctx, "claim", req.Key, err)
		}
		item := ccf.Item
		if item == nil {
			// The server does not return the item with the failure: read it.
			if item, err = s.getItem(ctx, "claim", req.Key, key); err != nil {
				return idemstore.ClaimResult{}, err
			}
			if item == nil {
				if round < maxClaimRounds {
					continue // deleted in between
				}
				return idemstore.ClaimResult{}, s.contention(req.Key)
			}
		}
		r, err := decode(req.Key, item)
		if err != nil {
			return idemstore.ClaimResult{}, err
		}
		if res, ok := s.found(req, &r, now, att.retried()); ok {
			return res, nil
		}
		// The item allows a claim: it is past its retention with steps
		// (claim it anew), or it changed after the condition failed
		// (fallback read), or clocks moved. Try again.
		anew = !s.retained(&r, now)
		if round >= maxClaimRounds {
			return idemstore.ClaimResult{}, s.contention(req.Key)
		}
	}
}

func (s *Store) contention(key string) error {
	return fmt.Errorf("%w: dynamostore: claim %q: the item kept changing under %d attempts", idem.ErrStoreUnavailable, key, maxClaimRounds)
}

func claimValues(req idemstore.ClaimRequest, now, lu, ex time.Time, s *Store) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":inp":     avInProgress,
		":rel":     avReleased,
		":ow":      &types.AttributeValueMemberB{Value: req.Owner[:]},
		":fp":      &types.AttributeValueMemberB{Value: req.Fingerprint[:]},
		":lu":      nanos(lu),
		":ex":      nanos(ex),
		":now":     nanos(now),
		":tko":     nanos(now.Add(-s.skew)),
		":ttl":     s.ttlAttr(ex),
		":zero":    avZero,
		":one":     avOne,
		":nosteps": avNoSteps,
	}
}

// acquired builds the result of a successful claim from the old item. It
// reads only what the claim's condition relied on (state, lease, expiry),
// the fence and the steps the claim kept (none when it claimed anew): the
// rest of a damaged item was overwritten and is gone.
func (s *Store) acquired(req idemstore.ClaimRequest, old map[string]types.AttributeValue, now, lu time.Time, anew bool) (idemstore.ClaimResult, error) {
	res := idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: 1, LeaseUntil: lu}
	if len(old) == 0 {
		return res, nil
	}
	if !anew {
		// claimCond kept them only for a retained record.
		steps, err := decodeSteps(old)
		if err != nil {
			return idemstore.ClaimResult{}, fmt.Errorf("%w: dynamostore: claim %q: %w", idem.ErrCorruptRecord, req.Key, err)
		}
		res.Steps = steps
	}
	if fe, err := attrN(old, aFence); err == nil {
		prev, err := strconv.ParseUint(fe, 10, 64)
		if err != nil {
			// The update added 1 to a number that is no fence: the key is
			// ours now, but its fence is not an integer.
			return idemstore.ClaimResult{}, fmt.Errorf("%w: dynamostore: claim %q: the item's fence %q is not an integer", idem.ErrCorruptRecord, req.Key, fe)
		}
		res.Fence = prev + 1
	}
	if st, _ := attrS(old, aState); st == stateInProgress {
		if ex, err := attrN(old, aExpiresAt); err == nil {
			if ns, err := strconv.ParseInt(ex, 10, 64); err == nil && now.UnixNano() < ns {
				res.Status = idemstore.ClaimTakenOver
			}
		}
	}
	return res, nil
}

// found turns the record that failed a claim's condition into the claim's
// answer; ok is false when the record in fact allows the claim.
func (s *Store) found(req idemstore.ClaimRequest, r *idemstore.Record, now time.Time, retried bool) (idemstore.ClaimResult, bool) {
	if !s.retained(r, now) {
		return idemstore.ClaimResult{}, false
	}
	if r.Fingerprint != req.Fingerprint {
		return idemstore.ClaimResult{Status: idemstore.ClaimMismatch, Fence: r.Fence}, true
	}
	switch r.State {
	case idemstore.StateInProgress:
		if retried && r.Owner == req.Owner {
			// Our own earlier attempt was applied and its response lost;
			// the steps it kept are the item's.
			return idemstore.ClaimResult{Status: idemstore.ClaimAcquired, Fence: r.Fence, LeaseUntil: r.LeaseUntil, Steps: r.Steps}, true
		}
		if s.takeoverable(r, now) {
			return idemstore.ClaimResult{}, false
		}
		return idemstore.ClaimResult{Status: idemstore.ClaimInProgress, Fence: r.Fence, LeaseUntil: r.LeaseUntil}, true
	case idemstore.StateCompleted, idemstore.StateFailed:
		st := idemstore.ClaimCompleted
		if r.State == idemstore.StateFailed {
			st = idemstore.ClaimFailed
		}
		return idemstore.ClaimResult{Status: st, Fence: r.Fence, Result: idemstore.Result{Data: r.Result}}, true
	}
	return idemstore.ClaimResult{}, false
}

// Heartbeat renews the lease: a fenced UpdateItem.
func (s *Store) Heartbeat(ctx context.Context, l idemstore.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	now := s.now()
	lu := now.Add(l.Duration)
	ex := lu.Add(l.TTL)
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                s.table,
		Key:                      s.itemKey(l.Key),
		UpdateExpression:         aws.String(heartbeatSet),
		ConditionExpression:      aws.String(ownedCond),
		ExpressionAttributeNames: s.fencedNames,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inp": avInProgress,
			":ow":  &types.AttributeValueMemberB{Value: l.Owner[:]},
			":fe":  uintN(l.Fence),
			":lu":  nanos(lu),
			":ex":  nanos(ex),
			":now": nanos(now),
			":ttl": s.ttlAttr(ex),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		return nil
	}
	if lost := asLeaseLost(l, err); lost != nil {
		return lost
	}
	return s.opError(ctx, "heartbeat", l.Key, err)
}

// Complete records the result under the lease: a fenced UpdateItem.
func (s *Store) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "complete", l, idemstore.StateCompleted, r.Data)
}

// Fail records a failure under the lease: a fenced UpdateItem.
func (s *Store) Fail(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	return s.finish(ctx, "fail", l, idemstore.StateFailed, r.Data)
}

// Release gives the key up, keeping the item and its fence.
func (s *Store) Release(ctx context.Context, l idemstore.Lease) error {
	return s.finish(ctx, "release", l, idemstore.StateReleased, nil)
}

func (s *Store) finish(ctx context.Context, op string, l idemstore.Lease, state idemstore.State, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if size, max := s.itemSize(l.Key, len(data)), MaxItemSize; size > max {
		return fmt.Errorf("%w: %s %q: a %d-byte result makes a %d-byte item (limit %d; this key holds at most %d result bytes)",
			ErrItemTooLarge, op, l.Key, len(data), size, max, s.MaxResultSize(l.Key))
	}
	now := s.now()
	ex := now.Add(l.TTL)
	vals := map[string]types.AttributeValue{
		":inp": avInProgress,
		":ow":  &types.AttributeValueMemberB{Value: l.Owner[:]},
		":fe":  uintN(l.Fence),
		":st":  stateAV(state),
		":ex":  nanos(ex),
		":now": nanos(now),
		":ttl": s.ttlAttr(ex),
	}
	set, names := finishSetEmpty, s.finishNames
	switch {
	case state == idemstore.StateReleased:
		set, names = releaseSetEmpty, s.releaseNames // the steps stay for the call's next run
	case len(data) > 0:
		set = finishSet
		vals[":res"] = &types.AttributeValueMemberB{Value: data}
	}
	var att attempts
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           s.table,
		Key:                                 s.itemKey(l.Key),
		UpdateExpression:                    aws.String(set),
		ConditionExpression:                 aws.String(ownedCond),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           vals,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, att.option)
	if err == nil {
		s.finished(l.Key, state)
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return s.opError(ctx, op, l.Key, err)
	}
	item := ccf.Item
	if att.retried() {
		// The SDK sent the write more than once: the condition may have
		// failed on our own first attempt. Look at the item to tell.
		if item == nil {
			if item, err = s.getItem(ctx, op, l.Key, s.itemKey(l.Key)); err != nil {
				return err
			}
		}
		if item != nil {
			if r, err := decode(l.Key, item); err == nil && r.State == state && r.Owner == l.Owner &&
				r.Fence == l.Fence && bytes.Equal(r.Result, data) {
				return nil
			}
		}
	}
	return leaseLost(l, item)
}

// SaveStep records a step of the call l owns (see idemstore.Stepper): one
// UpdateItem that sets the step in the item's steps map if it is not there
// yet, on the condition that l still owns the record (state, owner, fence).
// A step that would take the item over 400 KB is ErrItemTooLarge: before
// any request when the step alone cannot fit, else by DynamoDB's answer.
func (s *Store) SaveStep(ctx context.Context, l idemstore.Lease, name string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkKey(l.Key); err != nil {
		return err
	}
	if size := s.itemSize(l.Key, 0) + len(aSteps) + 3 + stepSize(name, data); size > MaxItemSize {
		return fmt.Errorf("%w: step %q of %q: a %d-byte result makes an item of up to %d bytes with no other step (limit %d)",
			ErrItemTooLarge, name, l.Key, len(data), size, MaxItemSize)
	}
	if data == nil {
		data = []byte{} // a binary value, empty
	}
	names := make(map[string]string, len(s.stepNames)+1)
	maps.Copy(names, s.stepNames)
	names["#n"] = stepkey.Key(name)
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                s.table,
		Key:                      s.itemKey(l.Key),
		UpdateExpression:         aws.String(stepSet),
		ConditionExpression:      aws.String(ownedCond),
		ExpressionAttributeNames: names,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inp": avInProgress,
			":ow":  &types.AttributeValueMemberB{Value: l.Owner[:]},
			":fe":  uintN(l.Fence),
			":d":   &types.AttributeValueMemberB{Value: data},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if err == nil {
		// A retried request whose first attempt was applied finds the
		// lease still held and the step set: nothing changes.
		return nil
	}
	if lost := asLeaseLost(l, err); lost != nil {
		return lost
	}
	if tooLarge(err) {
		return fmt.Errorf("%w: step %q of %q (%d bytes): %w", ErrItemTooLarge, name, l.Key, len(data), err)
	}
	return s.opError(ctx, "step", l.Key, err)
}

// tooLarge reports whether err is DynamoDB's refusal of an update that
// would make the item larger than 400 KB.
func tooLarge(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" &&
		strings.Contains(ae.ErrorMessage(), "exceeded the maximum allowed size")
}

// asLeaseLost is leaseLost of the item a failed condition returned, or
// nil where err is no such failure.
func asLeaseLost(l idemstore.Lease, err error) error {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return leaseLost(l, ccf.Item)
	}
	return nil
}

// leaseLost is the error for a fenced write whose condition failed; item,
// when the server returned it, says what holds the key now.
func leaseLost(l idemstore.Lease, item map[string]types.AttributeValue) error {
	if item == nil {
		return fmt.Errorf("%w: %s fence %d", idem.ErrLeaseLost, l.Key, l.Fence)
	}
	r, err := decodeLoose(item)
	if err != nil {
		return fmt.Errorf("%w: %s fence %d (the item is unreadable: %v)", idem.ErrLeaseLost, l.Key, l.Fence, err)
	}
	return fmt.Errorf("%w: %s fence %d (the item is %s at fence %d)", idem.ErrLeaseLost, l.Key, l.Fence, r.State, r.Fence)
}

// Get returns the live record for key (a consistent read).
func (s *Store) Get(ctx context.Context, key string) (idemstore.Record, error) {
	if err := ctx.Err(); err != nil {
		return idemstore.Record{}, err
	}
	if err := s.checkKey(key); err != nil {
		return idemstore.Record{}, err
	}
	r, _, err := s.getLive(ctx, "get", key, s.itemKey(key))
	return r, err
}

// Delete removes the item whatever its state (the next claim starts again
// at fence 1).
func (s *Store) Delete(ctx context.Context, key string) error {
	s.hint.Drop(key) // the next claim of key is likely a new run
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.checkKey(key); err != nil {
		return err
	}
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                s.table,
		Key:                      s.itemKey(key),
		ConditionExpression:      aws.String(deleteCond),
		ExpressionAttributeNames: s.deleteNames,
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ccf):
		return fmt.Errorf("%w: %s", idem.ErrNotFound, key)
	}
	return s.opError(ctx, "delete", key, err)
}

// checkKey rejects keys DynamoDB cannot store as a partition key value,
// before any request: DynamoDB's own answer (a ValidationException) would
// read as an unavailable store, which a fail-open Guard rides out by
// running the function unguarded on every call.
func (s *Store) checkKey(key string) error {
	if n := len(s.layout.prefix) + len(key); n == 0 || n > maxPartitionKey {
		return fmt.Errorf("%w: dynamostore: partition key value of %d bytes (DynamoDB allows 1 to %d)", idem.ErrInvalidKey, n, maxPartitionKey)
	}
	return nil
}

// maxPartitionKey is DynamoDB's limit on a partition key value, in bytes.
const maxPartitionKey = 2048

var (
	_ idemstore.Store   = (*Store)(nil)
	_ idemstore.Stepper = (*Store)(nil)
)
