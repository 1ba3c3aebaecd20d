// Package capacity is idemgen's capacity harness: it drives real worker
// processes (this test binary, re-executed) against each networked store
// on this machine and measures, per store, first executions and replays
// per second at saturation with the CPU each side used, latency at half
// of saturation, bytes per record in the store's own accounting and
// cleanup throughput while writes continue, each next to a raw client
// baseline (SET NX / GET, INSERT … ON CONFLICT / SELECT, …) measured in
// the same run. TestPostgresAtSize fills a records table to 20 million
// rows with SQL and compares claim and replay latency with a near-empty
// table. TestCapacity writes docs/CAPACITY.md when IDEM_CAPACITY_REPORT
// names it (make capacity).
//
// Environment: IDEM_CAPACITY=full (full windows; the default is a short
// run for make test), IDEM_CAPACITY_PG_ROWS (rows of the large table,
// default 20,000,000 in the full run), IDEM_CAPACITY_STORES (comma list,
// default redis,postgres,dynamo,firestore,file), and the services'
// addresses of internal/testenv.
package capacity
