package idemctl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
)

// backend is an opened store: the Store and Admin views of it, the store's
// clock (so "older than" and "expired" are judged as the store judges
// leases, not by the operator's laptop) and how to let it go.
type backend struct {
	kind  string
	store idemstore.Store
	admin idemstore.Admin
	now   func(context.Context) (time.Time, error)
	close func()
}

// errUsage marks errors in the command line (exit 1, with a hint to -h).
var errUsage = errors.New("usage")

// open connects to the store named by rawURL:
//
//	redis://[user:pass@]host:port/db[?redis_prefix=P&<go-redis options>]
//	rediss://...                        (TLS)
//	redis+cluster://h1:p1,h2:p2[?redis_prefix=P&...]
//	redis+sentinel://h1:p1,h2:p2/db?master_name=M[&redis_prefix=P&...]
//	postgres://user@host:port/db[?schema=S&table=T&<libpq/pgx options>]
//	file:///path/to/store/dir
//	firestore://PROJECT/COLLECTION[?database=D&emulator=HOST:PORT]
//	dynamodb://TABLE[?region=R&endpoint=URL&partition_key=PK&sort_key=SK&sort_value=V&key_prefix=P&ttl_attribute=T]
//
// redis_prefix is the redisstore.WithKeyPrefix of the application's store
// (the Redis key namespace, default empty), not the Guard's key prefix.
func open(ctx context.Context, rawURL string) (*backend, error) {
	if rawURL == "" {
		return nil, fmt.Errorf("%w: no store: pass -store URL or set IDEMCTL_STORE (redis://host:6379/0, postgres://host/db, file:///dir)", errUsage)
	}
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, fmt.Errorf("%w: store %q is not a URL (redis://host:6379/0, postgres://host/db, file:///dir)", errUsage, rawURL)
	}
	switch strings.ToLower(scheme) {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		return openRedis(ctx, rawURL, strings.ToLower(scheme))
	case "postgres", "postgresql":
		return openPostgres(ctx, rawURL)
	case "file":
		return openFile(rawURL)
	case "firestore":
		return openFirestore(ctx, rawURL) // open_firestore.go
	case "dynamodb":
		return openDynamo(ctx, rawURL) // open_dynamodb.go
	case "memory", "mem":
		return nil, fmt.Errorf("%w: a memory store lives inside one process; idemctl can only reach Redis, Postgres, Firestore, DynamoDB and file stores", errUsage)
	}
	return nil, fmt.Errorf("%w: unknown store scheme %q (want redis, rediss, redis+cluster, redis+sentinel, postgres, firestore, dynamodb or file)", errUsage, scheme)
}

// redact hides a URL's password in messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Redacted()
}

// quietRedis drops go-redis's own log lines ("failed to dial after 5
// attempts"): idemctl reports the error itself, once.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

func openRedis(ctx context.Context, raw, scheme string) (*backend, error) {
	quietOnce.Do(func() { redis.SetLogger(quietRedis{}) })
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", errUsage, err)
	}
	q := u.Query()
	var opts []redisstore.Option
	if p := q.Get("redis_prefix"); p != "" {
		opts = append(opts, redisstore.WithKeyPrefix(p))
	}
	q.Del("redis_prefix")
	base, topo, _ := strings.Cut(scheme, "+")
	u.Scheme = base
	var rdb redis.UniversalClient
	switch topo {
	case "":
		u.RawQuery = q.Encode()
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("%w: store URL %s: %v", errUsage, redact(raw), err)
		}
		rdb = redis.NewClient(o)
	case "cluster", "sentinel":
		// go-redis takes extra seed addresses as addr= parameters; a
		// comma-separated host list is what operators write.
		hosts := strings.Split(u.Host, ",")
		u.Host = hosts[0]
		for _, h := range hosts[1:] {
			q.Add("addr", h)
		}
		u.RawQuery = q.Encode()
		if topo == "cluster" {
			o, err := redis.ParseClusterURL(u.String())
			if err != nil {
				return nil, fmt.Errorf("%w: store URL %s: %v", errUsage, redact(raw), err)
			}
			rdb = redis.NewClusterClient(o)
		} else {
			o, err := redis.ParseFailoverURL(u.String())
			if err != nil {
				return nil, fmt.Errorf("%w: store URL %s: %v", errUsage, redact(raw), err)
			}
			rdb = redis.NewFailoverClient(o)
		}
	}
	// The operator tool must not warn about (or refuse) the eviction
	// policy: that is the application's business, and a refusing store
	// would keep the operator from repairing it.
	opts = append(opts, redisstore.WithEvictionCheck(redisstore.EvictionIgnore))
	st, err := redisstore.New(ctx, rdb, opts...) // PINGs the server
	if err != nil {
		rdb.Close()
		if errors.Is(err, idem.ErrStoreUnavailable) {
			return nil, fmt.Errorf("connecting to Redis at %s: %w", redact(raw), err)
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	now := func(ctx context.Context) (time.Time, error) {
		// TIME on the server (any master of a Cluster: their clocks are
		// what each key's lease is judged by; they agree closely enough
		// for "older than ten minutes").
		t, err := rdb.Time(ctx).Result()
		if err != nil {
			return time.Time{}, fmt.Errorf("reading the Redis clock: %w", err)
		}
		return t, nil
	}
	return &backend{kind: "redis", store: st, admin: st, now: now, close: func() { st.Close(); rdb.Close() }}, nil
}

func openPostgres(ctx context.Context, raw string) (*backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", errUsage, err)
	}
	q := u.Query()
	var opts []pgstore.Option
	if s := q.Get("schema"); s != "" {
		opts = append(opts, pgstore.WithSchema(s))
	}
	if t := q.Get("table"); t != "" {
		opts = append(opts, pgstore.WithTable(t))
	}
	q.Del("schema")
	q.Del("table")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: store URL %s: %v", errUsage, redact(raw), err)
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", redact(raw), err)
	}
	st, err := pgstore.New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening the records table (schema= and table= select it): %w", err)
	}
	now := func(ctx context.Context) (time.Time, error) {
		var t time.Time
		if err := pool.QueryRow(ctx, "SELECT statement_timestamp()").Scan(&t); err != nil {
			return time.Time{}, fmt.Errorf("reading the PostgreSQL clock: %w", err)
		}
		return t, nil
	}
	return &backend{kind: "postgres", store: st, admin: st, now: now, close: func() { st.Close(); pool.Close() }}, nil
}

func openFile(raw string) (*backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", errUsage, err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("%w: file store URL %q names host %q: write file:///absolute/path", errUsage, raw, u.Host)
	}
	dir := u.Path
	if dir == "" {
		return nil, fmt.Errorf("%w: file store URL %q has no path: write file:///absolute/path", errUsage, raw)
	}
	// filestore.New creates a missing directory; for an operator a typo
	// must not look like an empty store.
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("opening file store: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening file store: %s is not a directory", dir)
	}
	st, err := filestore.New(dir)
	if err != nil {
		return nil, fmt.Errorf("opening file store: %w", err)
	}
	now := func(context.Context) (time.Time, error) { return time.Now(), nil }
	return &backend{kind: "file", store: st, admin: st, now: now, close: func() {}}, nil
}
