package idemctl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
)

// openFirestore opens
//
//	firestore://PROJECT/COLLECTION[?database=D&emulator=HOST:PORT]
//
// COLLECTION is the firestorestore collection (a path such as
// services/billing/idem is allowed). Credentials are the application
// default ones; emulator= (or FIRESTORE_EMULATOR_HOST) talks plaintext to
// a Firestore emulator instead.
func openFirestore(ctx context.Context, raw string) (*backend, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", errUsage, err)
	}
	project, coll := u.Host, strings.Trim(u.Path, "/")
	if project == "" || coll == "" {
		return nil, fmt.Errorf("%w: Firestore store URL %q: write firestore://PROJECT/COLLECTION", errUsage, raw)
	}
	q := u.Query()
	var opts []option.ClientOption
	if addr := q.Get("emulator"); addr != "" {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(emulatorOwner{}))
		if err != nil {
			return nil, fmt.Errorf("%w: store URL %s: emulator: %v", errUsage, raw, err)
		}
		opts = append(opts, option.WithGRPCConn(conn))
	}
	db := q.Get("database")
	if db == "" {
		db = firestore.DefaultDatabaseID
	}
	client, err := firestore.NewClientWithDatabase(ctx, project, db, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to Firestore (project %s): %w", project, err)
	}
	st, err := firestorestore.New(ctx, client, coll)
	if err != nil {
		client.Close()
		if errors.Is(err, idem.ErrStoreUnavailable) {
			return nil, fmt.Errorf("connecting to Firestore at %s: %w", raw, err)
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	now := func(ctx context.Context) (time.Time, error) {
		// A read's read time is Firestore's clock, which the store judges
		// leases by.
		snap, err := st.Collection().Doc("idem-reachability-probe").Get(ctx)
		if err != nil && status.Code(err) != codes.NotFound {
			return time.Time{}, fmt.Errorf("reading the Firestore clock: %w", err)
		}
		return snap.ReadTime, nil
	}
	return &backend{kind: "firestore", store: st, admin: st, now: now, close: func() { client.Close() }}, nil
}

// emulatorOwner is the Firestore emulator's administrator token.
type emulatorOwner struct{}

func (emulatorOwner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}
func (emulatorOwner) RequireTransportSecurity() bool { return false }
