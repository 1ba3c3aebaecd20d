// Package emulator connects the test module's harnesses to the local
// emulators that scripts/ starts.
package emulator

import (
	"context"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Firestore is a client of project on the Firestore emulator at addr,
// configured as FIRESTORE_EMULATOR_HOST would (plaintext, the emulator's
// owner token).
func Firestore(ctx context.Context, addr, project string) (*firestore.Client, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(owner{}))
	if err != nil {
		return nil, err
	}
	return firestore.NewClient(ctx, project, option.WithGRPCConn(conn))
}

// owner is the emulator's administrator token.
type owner struct{}

func (owner) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer owner"}, nil
}

func (owner) RequireTransportSecurity() bool { return false }
