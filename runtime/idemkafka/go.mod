module github.com/idemgen/idemgen/runtime/idemkafka

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/idemgen/idemgen v0.0.0-00010101000000-000000000000
	github.com/idemgen/idemgen/runtime/redisstore v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
	github.com/twmb/franz-go/pkg/kmsg v1.15.1
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/twmb/franz-go/pkg/kadm v1.20.0
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

require (
	github.com/idemgen/idemgen/runtime/pgstore v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go v1.22.3
)

replace github.com/idemgen/idemgen => ../..

replace github.com/idemgen/idemgen/runtime/redisstore => ../redisstore

replace github.com/idemgen/idemgen/runtime/pgstore => ../pgstore
