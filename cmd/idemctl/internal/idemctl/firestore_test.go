package idemctl

import (
	"context"
	"net/url"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// openFirestoreBackend is the Firestore emulator backend: the
// application's store on a fresh collection, and the firestore:// URL
// idemctl gets for it.
func openFirestoreBackend(t *testing.T) (string, idemstore.Store) {
	addr := testenv.FirestoreEmulatorHost()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(emulatorOwner{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "idemctl-test", option.WithGRPCConn(conn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	// The client retries an unreachable emulator for as long as ctx
	// lasts: bound the probe, so a missing emulator skips, not hangs.
	probe, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = client.Collection("probe").Doc("probe").Get(probe)
	if status.Code(err) == codes.NotFound {
		err = nil
	}
	testenv.Need(t, "the Firestore emulator at "+addr, "Start it: scripts/firestore.sh (or make services), or set IDEM_FIRESTORE_EMULATOR_HOST.", err)
	coll := "idemctl_" + testenv.RandName()
	st, err := firestorestore.New(ctx, client, coll)
	if err != nil {
		t.Fatal(err)
	}
	return "firestore://idemctl-test/" + coll + "?emulator=" + url.QueryEscape(addr), st
}
