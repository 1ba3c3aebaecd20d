package capacity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/pgstore"
	"github.com/idemgen/idemgen/runtime/redisstore"
	"github.com/idemgen/idemgen/test/internal/emulator"
)

// rawValue is what the raw baselines write: about a record's size (a
// Redis record is a 99-byte header plus the encoded result).
var rawValue = []byte(strings.Repeat("r", 128))

// firestoreProject is the emulator project of the harness.
const firestoreProject = "idemgen-capacity"

// backend is a worker's store and its raw client baseline.
type backend struct {
	store    idemstore.Store
	rawFirst func(ctx context.Context, key string) error // create-if-absent
	rawRead  func(ctx context.Context, key string) error // read a key (absent is fine)
	close    func()
}

func openBackend(ctx context.Context, cfg workerConfig) (*backend, error) {
	switch cfg.Store {
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: cfg.Addr, PoolSize: max(16, cfg.Goroutines)})
		st, err := redisstore.New(ctx, rdb, redisstore.WithKeyPrefix(cfg.Name),
			redisstore.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))))
		if err != nil {
			rdb.Close()
			return nil, err
		}
		rawPrefix := cfg.Name + "raw:"
		return &backend{
			store: st,
			rawFirst: func(ctx context.Context, key string) error {
				return rdb.SetArgs(ctx, rawPrefix+key, rawValue, redis.SetArgs{Mode: "NX", TTL: 24 * time.Hour}).Err()
			},
			rawRead: func(ctx context.Context, key string) error {
				err := rdb.Get(ctx, rawPrefix+key).Err()
				if errors.Is(err, redis.Nil) {
					err = nil
				}
				return err
			},
			close: func() { st.Close(); rdb.Close() },
		}, nil
	case "postgres":
		pc, err := pgxpool.ParseConfig(cfg.Addr)
		if err != nil {
			return nil, err
		}
		pc.MaxConns = int32(max(4, cfg.Goroutines))
		pc.ConnConfig.RuntimeParams["application_name"] = cfg.App
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			return nil, err
		}
		opts := []pgstore.Option{pgstore.WithSchema(cfg.Name)}
		if cfg.Table != "" {
			opts = append(opts, pgstore.WithTable(cfg.Table))
		}
		st, err := pgstore.New(ctx, pool, opts...)
		if err != nil {
			pool.Close()
			return nil, err
		}
		raw := pgx.Identifier{cfg.Name, "raw"}.Sanitize()
		return &backend{
			store: st,
			rawFirst: func(ctx context.Context, key string) error {
				_, err := pool.Exec(ctx, `INSERT INTO `+raw+` (key, val) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, rawValue)
				return err
			},
			rawRead: func(ctx context.Context, key string) error {
				var v []byte
				err := pool.QueryRow(ctx, `SELECT val FROM `+raw+` WHERE key = $1`, key).Scan(&v)
				if errors.Is(err, pgx.ErrNoRows) {
					err = nil
				}
				return err
			},
			close: func() { st.Close(); pool.Close() },
		}, nil
	case "dynamo":
		client := emulator.Dynamo(cfg.Addr, 0, 0)
		st, err := dynamostore.New(ctx, client, cfg.Name)
		if err != nil {
			return nil, err
		}
		rawTable := aws.String(cfg.Name + "_raw")
		return &backend{
			store: st,
			rawFirst: func(ctx context.Context, key string) error {
				_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
					TableName: rawTable,
					Item: map[string]types.AttributeValue{
						"pk": &types.AttributeValueMemberS{Value: key}, "v": &types.AttributeValueMemberB{Value: rawValue},
					},
					ConditionExpression: aws.String("attribute_not_exists(pk)"),
				})
				return err
			},
			rawRead: func(ctx context.Context, key string) error {
				_, err := client.GetItem(ctx, &dynamodb.GetItemInput{
					TableName: rawTable, ConsistentRead: aws.Bool(true),
					Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}},
				})
				return err
			},
			close: func() {},
		}, nil
	case "firestore":
		client, err := firestoreClient(ctx, cfg.Addr)
		if err != nil {
			return nil, err
		}
		nctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		st, err := firestorestore.New(nctx, client, cfg.Name)
		if err != nil {
			client.Close()
			return nil, err
		}
		raw := client.Collection(cfg.Name + "_raw")
		return &backend{
			store: st,
			rawFirst: func(ctx context.Context, key string) error {
				_, err := raw.Doc(key).Create(ctx, map[string]any{"v": rawValue})
				return err
			},
			// The raw read takes the value out of the document, as the
			// other stores' raw reads do (Scan, the reply's bytes).
			rawRead: func(ctx context.Context, key string) error {
				snap, err := raw.Doc(key).Get(ctx)
				if status.Code(err) == codes.NotFound {
					return nil
				}
				if err != nil {
					return err
				}
				v, err := snap.DataAt("v")
				if _, ok := v.([]byte); err == nil && !ok {
					err = fmt.Errorf("raw document %s: v is %T", key, v)
				}
				return err
			},
			close: func() { client.Close() },
		}, nil
	case "file":
		st, err := filestore.New(filepath.Join(cfg.Name, "store"))
		if err != nil {
			return nil, err
		}
		rawDir := filepath.Join(cfg.Name, "raw")
		rawPath := func(key string) string {
			sum := sha256.Sum256([]byte(key))
			h := hex.EncodeToString(sum[:])
			return filepath.Join(rawDir, h[:2], h)
		}
		for i := range 256 {
			if err := os.MkdirAll(filepath.Join(rawDir, fmt.Sprintf("%02x", i)), 0o755); err != nil {
				return nil, err
			}
		}
		return &backend{
			store: st,
			// The raw file write: create exclusively, write, fsync (the
			// file store syncs its records by default).
			rawFirst: func(ctx context.Context, key string) error {
				f, err := os.OpenFile(rawPath(key), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				if _, err := f.Write(rawValue); err != nil {
					f.Close()
					return err
				}
				if err := f.Sync(); err != nil {
					f.Close()
					return err
				}
				return f.Close()
			},
			rawRead: func(ctx context.Context, key string) error {
				_, err := os.ReadFile(rawPath(key))
				if errors.Is(err, os.ErrNotExist) {
					err = nil
				}
				return err
			},
			close: func() {},
		}, nil
	}
	return nil, fmt.Errorf("unknown store %q", cfg.Store)
}

// firestoreClient is a client of the harness's project on the emulator
// at addr.
func firestoreClient(ctx context.Context, addr string) (*firestore.Client, error) {
	return emulator.Firestore(ctx, addr, firestoreProject)
}
