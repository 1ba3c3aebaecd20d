// Package idemctl is the operator command behind cmd/idemctl: it lists,
// inspects and repairs idempotency records in a Redis, PostgreSQL or file
// store through the stores' idemstore.Admin interface. It is a library so that
// tests run it in-process; cmd/idemctl is a thin main over Run.
//
//	idemctl [global flags] <command> [flags] [args]
//
// Commands: list, show KEY, release KEY, delete KEY, stats, cleanup. Global
// flags (-store, -prefix, -json, -timeout) may also follow the command.
// Output is sorted by key (list) or by function (stats), so it is stable
// for scripts and tests; -json prints the same data as JSON.
//
// Exit status: 0 success; 1 an error (bad usage, unreachable store, a
// store error, a refused operation); 2 the key of show, release or delete
// has no live record.
package idemctl

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// Exit statuses.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitNotFound = 2
)

// errNotFound marks "no such key" outcomes (exit 2).
var errNotFound = errors.New("not found")

const usageText = `usage: idemctl [flags] <command> [flags] [args]

Inspect and repair idempotency records (runtime/redisstore, pgstore, filestore,
firestorestore, dynamostore).

commands:
  list                 records, sorted by key (-func, -state, -older, -stale, -limit)
                       -older D: owners running for D or more, heartbeating
                       or not (a hung function); -stale D: owners that have
                       not heartbeated for D
  show KEY             one record: state, owner, fence, lease, times, size
  release KEY          force-release KEY and bump its fence: a still-running
                       owner can no longer heartbeat or complete, and the next
                       call runs the function again (-force for completed keys)
  delete KEY           remove KEY's record (-force for in-progress keys)
  stats                record counts per function, version and state
  cleanup              remove records that are no longer live
  key PACKAGE FUNC ARGS
                       the store key of a call: FUNC (Charge, or Type.Method)
                       of PACKAGE (an import path or ./dir of your module),
                       ARGS its arguments but the context as JSON (an array,
                       or an object by parameter name); needs no store

store URLs (-store, or $IDEMCTL_STORE):
  redis://[user:pass@]host:6379/0[?redis_prefix=P]      rediss:// for TLS
  redis+cluster://h1:7000,h2:7001[?redis_prefix=P]
  redis+sentinel://h1:26379,h2:26379/0?master_name=M
  postgres://user@host:5432/db[?schema=S&table=T]
  file:///var/lib/myapp/idem
  firestore://PROJECT/COLLECTION[?database=D&emulator=HOST:PORT]
  dynamodb://TABLE[?region=R&endpoint=URL&key_prefix=P&partition_key=PK
                   &sort_key=SK&sort_value=V&ttl_attribute=T]
  (redis_prefix is the store's redisstore.WithKeyPrefix; -prefix is the
  Guard's idem.WithKeyPrefix)

exit status: 0 ok, 1 error, 2 key not found

flags:
`

// options are the flags every command accepts.
type options struct {
	store    string // -store; envStore when not given
	envStore string
	// keyringFile (-keyring-file) or envKeyring ($IDEMCTL_KEYRING) holds
	// the keyring that opens sealed records; never a flag's value, which
	// the process list would show.
	keyringFile string
	envKeyring  string
	prefix      string
	json        bool
	timeout     time.Duration
}

func (o *options) register(fs *flag.FlagSet) {
	// The default is the environment's and the text says so; the value
	// is not o.store's default (printing both said it twice), and a
	// command's flag set, registered after the global flags were parsed,
	// keeps what they set.
	fs.Var(stringFlag{&o.store}, "store", "store `URL` (default $IDEMCTL_STORE)")
	fs.StringVar(&o.prefix, "prefix", o.prefix, "the Guard's key prefix (idem.WithKeyPrefix)")
	fs.BoolVar(&o.json, "json", o.json, "print JSON instead of aligned text")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "give up after this long (0: no limit)")
	fs.StringVar(&o.keyringFile, "keyring-file", o.keyringFile, "a file holding the keyring that opens sealed records (idemseal.Parse's form; default $IDEMCTL_KEYRING)")
}

// stringFlag is a string flag that takes no default of its own.
type stringFlag struct{ p *string }

func (f stringFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f stringFlag) Set(v string) error {
	*f.p = v
	return nil
}

// Run runs idemctl with args (without the program name) and returns the
// exit status. getenv reads IDEMCTL_STORE (nil: os.Getenv).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	o := &options{envStore: getenv("IDEMCTL_STORE"), envKeyring: getenv("IDEMCTL_KEYRING"), prefix: "idem:", timeout: 30 * time.Second}
	fs := flag.NewFlagSet("idemctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return ExitError
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	cmd, ok := commands[name]
	if !ok {
		if name == "help" {
			fs.SetOutput(stdout)
			fmt.Fprint(stdout, usageText)
			fs.PrintDefaults()
			return ExitOK
		}
		fmt.Fprintf(stderr, "idemctl: unknown command %q (want list, show, release, delete, stats, cleanup or key; idemctl -h for help)\n", name)
		return ExitError
	}
	c := &cmdCtx{opts: o, stdout: stdout, stderr: stderr}
	cfs := flag.NewFlagSet("idemctl "+name, flag.ContinueOnError)
	cfs.SetOutput(stderr)
	o.register(cfs)
	run := cmd(c, cfs)
	cfs.Usage = func() {
		fmt.Fprintf(stderr, "usage: idemctl %s\n\nflags:\n", cmdUsage[name])
		cfs.PrintDefaults()
	}
	pos, err := parseInterspersed(cfs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitError
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	err = run(ctx, pos)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errNotFound):
		fmt.Fprintf(stderr, "idemctl %s: %v\n", name, err)
		return ExitNotFound
	case errors.Is(err, errUsage):
		fmt.Fprintf(stderr, "idemctl %s: %s\n", name, strings.TrimPrefix(err.Error(), "usage: "))
		return ExitError
	default:
		fmt.Fprintf(stderr, "idemctl %s: %v\n", name, err)
		return ExitError
	}
}

// parseInterspersed parses flags that may come before, between or after
// positional arguments ("show KEY -json"); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

type cmdCtx struct {
	opts           *options
	stdout, stderr io.Writer
	b              *backend
	now            time.Time // the store's clock when the command started
}

// connect opens the store and reads its clock.
func (c *cmdCtx) connect(ctx context.Context) error {
	url := c.opts.store
	if url == "" {
		url = c.opts.envStore
	}
	b, err := open(ctx, url)
	if err != nil {
		return err
	}
	now, err := b.now(ctx)
	if err != nil {
		b.close()
		return err
	}
	c.b, c.now = b, now
	return nil
}

func (c *cmdCtx) close() {
	if c.b != nil {
		c.b.close()
	}
}

type command func(c *cmdCtx, fs *flag.FlagSet) func(ctx context.Context, args []string) error

var commands = map[string]command{
	"list":    listCmd,
	"show":    showCmd,
	"release": releaseCmd,
	"delete":  deleteCmd,
	"stats":   statsCmd,
	"cleanup": cleanupCmd,
	"key":     keyCmd,
}

var cmdUsage = map[string]string{
	"list":    "list [-func NAME] [-state in_progress|completed|failed|released] [-older DURATION] [-stale DURATION] [-limit N]",
	"show":    "show [-result] KEY",
	"release": "release [-force] KEY",
	"delete":  "delete [-force] KEY",
	"stats":   "stats [-func NAME]",
	"cleanup": "cleanup",
	"key":     "key [-C DIR] [-hmac-env VAR] PACKAGE FUNC ARGS",
}

func wantArgs(args []string, n int, what string) error {
	if len(args) != n {
		if n == 0 {
			return fmt.Errorf("%w: unexpected arguments %q", errUsage, args)
		}
		return fmt.Errorf("%w: want exactly %s, got %d arguments", errUsage, what, len(args))
	}
	return nil
}

// view is one record as printed. Times are the store's, in UTC.
type view struct {
	Key         string    `json:"key"`
	Func        string    `json:"func"`
	Version     int       `json:"version"`
	State       string    `json:"state"`
	Owner       string    `json:"owner,omitempty"`
	Fence       uint64    `json:"fence"`
	Fingerprint string    `json:"fingerprint"`
	LeaseUntil  time.Time `json:"lease_until,omitzero"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	UpdatedAt   time.Time `json:"updated_at,omitzero"`
	// ClaimedAt is when the current (or last) owner claimed the key;
	// absent for a record written before stores kept it.
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// ResultSize counts the stored result's (or recorded error's) bytes,
	// not those of the header naming the function that wrote it.
	ResultSize int `json:"result_size"`
	// LeaseExpired: in progress, but the owner's lease is over; the next
	// call takes the key over.
	LeaseExpired bool `json:"lease_expired,omitempty"`
	// Live is false for a record past its expiry that cleanup (or Redis)
	// has not removed yet: the store treats it as absent.
	Live bool `json:"live"`
	// Error is a failed record's recorded error message (show only).
	Error string `json:"error,omitempty"`
	// Result is the stored result (show -result): JSON as is, other bytes
	// as a string.
	Result json.RawMessage `json:"result,omitempty"`
	// Sealed: the result is sealed (idem.WithSealer) and no keyring was
	// given to open it (show only).
	Sealed bool `json:"sealed,omitempty"`
	// Steps are the call's completed recovery points (idem.Step), by name
	// (show only). Steps that were running when an owner died are not
	// recorded: they run again.
	Steps []stepView `json:"steps,omitempty"`
}

// stepView is a completed step as show prints it.
type stepView struct {
	Name string `json:"name"`
	Size int    `json:"size"`
	// Result is the step's recorded result (show -result), as view.Result.
	Result json.RawMessage `json:"result,omitempty"`
}

// steps lists r's steps by name, with their results if withResult.
func steps(r idemstore.Record, withResult bool) []stepView {
	var out []stepView
	for _, name := range slices.Sorted(maps.Keys(r.Steps)) {
		body := recordBody(r.Steps[name])
		s := stepView{Name: name, Size: len(body)}
		if withResult {
			s.Result = rawResult(body)
		}
		out = append(out, s)
	}
	return out
}

// rawResult is body for JSON output: JSON as is, other bytes as a string.
func rawResult(body []byte) json.RawMessage {
	if json.Valid(body) {
		return body
	}
	q, _ := json.Marshal(resultText(body))
	return q
}

// openRecords replaces r's sealed or compressed records (result and
// steps) with the records they hold, opened with the keyring given. sealed
// reports records left sealed for want of one (they are dropped from r).
func (c *cmdCtx) openRecords(r *idemstore.Record) (sealed bool, err error) {
	var ring *idemseal.Keyring
	if c.opts.keyringFile != "" || c.opts.envKeyring != "" {
		text := c.opts.envKeyring
		if c.opts.keyringFile != "" {
			b, err := os.ReadFile(c.opts.keyringFile)
			if err != nil {
				return false, err
			}
			text = string(b)
		}
		if ring, err = idemseal.Parse(text); err != nil {
			return false, err
		}
	}
	name, _, _ := splitKey(c.opts.prefix, r.Key)
	open := func(data []byte) ([]byte, error) {
		if len(data) == 0 || data[0] != idemimpl.EnvelopeMarker {
			return data, nil
		}
		t := idemimpl.Transform{}
		if idemimpl.Sealed(data) {
			if ring == nil {
				sealed = true
				return nil, nil
			}
			t.Sealer = ring
		}
		return t.Open(name, r.Key, data, 0)
	}
	if r.Result, err = open(r.Result); err != nil {
		return false, err
	}
	for step, data := range r.Steps {
		if r.Steps[step], err = open(data); err != nil {
			return false, err
		}
	}
	return sealed, nil
}

// recordBody is what the function stored (its result or recorded error),
// behind the header naming the function that wrote it; records of older
// builds have no header.
func recordBody(data []byte) []byte {
	if _, body, ok, err := idemimpl.SplitRecord(data); ok && err == nil {
		return body
	}
	return data
}

func (c *cmdCtx) view(r idemstore.Record) view {
	v := view{
		Key:         r.Key,
		State:       r.State.String(),
		Fence:       r.Fence,
		Fingerprint: hex.EncodeToString(r.Fingerprint[:]),
		LeaseUntil:  utc(r.LeaseUntil),
		ExpiresAt:   utc(r.ExpiresAt),
		UpdatedAt:   utc(r.UpdatedAt),
		ClaimedAt:   utc(r.ClaimedAt),
		ResultSize:  len(recordBody(r.Result)),
		Live:        r.ExpiresAt.IsZero() || c.now.Before(r.ExpiresAt),
	}
	if r.Owner != (idemstore.Token{}) {
		v.Owner = hex.EncodeToString(r.Owner[:])
	}
	if name, ver, ok := splitKey(c.opts.prefix, r.Key); ok {
		v.Func, v.Version = name, ver
	} else {
		v.Func, v.Version = "?", -1
	}
	v.LeaseExpired = r.State == idemstore.StateInProgress && v.Live && !c.now.Before(r.LeaseUntil)
	return v
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// claimedBefore reports whether the record's owner claimed it before t. A
// record without a claim time (written before stores kept one) was
// claimed no later than its last update, so it counts when that update is
// before t, and otherwise does not (its claim time is unknown).
func (v *view) claimedBefore(t time.Time) bool {
	if v.ClaimedAt.IsZero() {
		return v.UpdatedAt.Before(t)
	}
	return v.ClaimedAt.Before(t)
}

// status is the state as the text output shows it, with what the store
// would make of the record now.
func (v *view) status() string {
	switch {
	case !v.Live:
		return v.State + " (expired)"
	case v.LeaseExpired:
		return v.State + " (lease expired)"
	}
	return v.State
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02T15:04:05Z")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *cmdCtx) printJSON(v any) error {
	enc := json.NewEncoder(c.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (c *cmdCtx) table() *tabwriter.Writer {
	return tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
}

// collect lists the records under prefix that keep returns true for,
// without their result bytes (only their size is printed), sorted by key.
// A listing that stopped on corrupt records still returns what it read,
// with the error.
func (c *cmdCtx) collect(ctx context.Context, fn string, keep func(*view) bool) ([]view, error) {
	var out []view
	err := c.listFunc(ctx, fn, func(r idemstore.Record) error {
		v := c.view(r)
		if keep(&v) {
			out = append(out, v)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b view) int { return strings.Compare(a.Key, b.Key) })
	return out, err
}

// funcPrefix narrows a listing to the keys of the function named fn in
// full; listFunc falls back to the whole prefix for a shorter name.
func (c *cmdCtx) funcPrefix(fn string) string {
	if fn == "" {
		return c.opts.prefix
	}
	return c.opts.prefix + fn + ":v"
}

// matchFunc reports whether the function name (its name= or
// importpath.Func) is fn or ends with fn after a '.' or '/': -func
// ChargeCard and -func payments.ChargeCard both find
// example.com/shop/payments.ChargeCard.
func matchFunc(name, fn string) bool {
	if fn == "" || name == fn {
		return true
	}
	rest, ok := strings.CutSuffix(name, fn)
	return ok && (strings.HasSuffix(rest, ".") || strings.HasSuffix(rest, "/"))
}

// listFunc lists the records of the functions matching fn: first under
// the full name's prefix (one function's keys, cheap on a large store),
// then, when that finds none, every key under the Guard's prefix.
func (c *cmdCtx) listFunc(ctx context.Context, fn string, each func(idemstore.Record) error) error {
	seen := false
	visit := func(r idemstore.Record) error {
		if name, _, ok := splitKey(c.opts.prefix, r.Key); !ok || !matchFunc(name, fn) {
			return nil
		}
		seen = true
		return each(r)
	}
	err := c.b.admin.List(ctx, c.funcPrefix(fn), visit)
	if seen || fn == "" || (err != nil && !errors.Is(err, idem.ErrCorruptRecord)) {
		return err
	}
	return c.b.admin.List(ctx, c.opts.prefix, visit)
}

// errStopHint ends prefixHint's scan early.
var errStopHint = errors.New("enough examples")

// prefixHint, after a listing found nothing, looks for records under
// other Guard prefixes (an application that set idem.WithKeyPrefix) and
// says how to see them.
func (c *cmdCtx) prefixHint(ctx context.Context) {
	var examples []string
	err := c.b.admin.List(ctx, "", func(r idemstore.Record) error {
		if strings.HasPrefix(r.Key, c.opts.prefix) {
			return nil
		}
		examples = append(examples, r.Key)
		if len(examples) == 3 {
			return errStopHint
		}
		return nil
	})
	if len(examples) == 0 || (err != nil && !errors.Is(err, errStopHint) && !errors.Is(err, idem.ErrCorruptRecord)) {
		return
	}
	fmt.Fprintf(c.stderr, "idemctl: no records under -prefix %q, but the store has records under another prefix, such as\n", c.opts.prefix)
	for _, k := range examples {
		fmt.Fprintf(c.stderr, "  %s\n", k)
	}
	fmt.Fprintf(c.stderr, "Set -prefix to the application's idem.WithKeyPrefix (the part before the function's name).\n")
}

var states = map[string]idemstore.State{
	"in_progress": idemstore.StateInProgress,
	"completed":   idemstore.StateCompleted,
	"failed":      idemstore.StateFailed,
	"released":    idemstore.StateReleased,
}

func listCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	fn := fs.String("func", "", "only this function: its name= or importpath.Func, or the end of it after a '.' or '/' (ChargeCard)")
	state := fs.String("state", "", "only this state: in_progress, completed, failed or released")
	older := fs.Duration("older", 0, "only in-progress records claimed at least this long ago, by the store's clock: owners running this long, "+
		"heartbeating or not (a hung function); a record from before stores kept the claim time counts from its last update")
	stale := fs.Duration("stale", 0, "only in-progress records not updated (claimed or heartbeated) for this long, by the store's clock: owners that stopped heartbeating")
	limit := fs.Int("limit", 1000, "print at most this many records (0: all)")
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 0, ""); err != nil {
			return err
		}
		var want idemstore.State
		if *state != "" {
			s, ok := states[*state]
			if !ok {
				return fmt.Errorf("%w: -state %q: want in_progress, completed, failed or released", errUsage, *state)
			}
			want = s
		}
		if *older < 0 || *stale < 0 || *limit < 0 {
			return fmt.Errorf("%w: -older, -stale and -limit must not be negative", errUsage)
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		claimedBefore, updatedBefore := c.now.Add(-*older), c.now.Add(-*stale)
		rows, listErr := c.collect(ctx, *fn, func(v *view) bool {
			if want != idemstore.StateAbsent && v.State != want.String() {
				return false
			}
			if (*older > 0 || *stale > 0) && v.State != idemstore.StateInProgress.String() {
				return false
			}
			if *older > 0 && !v.claimedBefore(claimedBefore) {
				return false
			}
			if *stale > 0 && !v.UpdatedAt.Before(updatedBefore) {
				return false
			}
			return true
		})
		if listErr != nil && !errors.Is(listErr, idem.ErrCorruptRecord) {
			return fmt.Errorf("listing records: %w", listErr)
		}
		total := len(rows)
		if *limit > 0 && total > *limit {
			rows = rows[:*limit]
		}
		if c.opts.json {
			if rows == nil {
				rows = []view{}
			}
			if err := c.printJSON(rows); err != nil {
				return err
			}
		} else {
			tw := c.table()
			fmt.Fprintln(tw, "KEY\tSTATE\tFENCE\tCLAIMED\tUPDATED\tLEASE_UNTIL\tEXPIRES_AT\tSIZE")
			for _, v := range rows {
				lease := "-"
				if v.State == idemstore.StateInProgress.String() {
					lease = stamp(v.LeaseUntil)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", v.Key, v.status(), v.Fence, stamp(v.ClaimedAt), stamp(v.UpdatedAt), lease, stamp(v.ExpiresAt), v.ResultSize)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if total > len(rows) {
			fmt.Fprintf(c.stderr, "idemctl list: %d of %d records shown (-limit 0 shows all)\n", len(rows), total)
		}
		if total == 0 && listErr == nil {
			c.prefixHint(ctx)
		}
		if listErr != nil {
			return fmt.Errorf("listing records: %w", listErr)
		}
		return nil
	}
}

// lookup returns key's live record. A record past its expiry that has not
// been cleaned up yet is found through List (Redis removes those itself).
func (c *cmdCtx) lookup(ctx context.Context, key string) (idemstore.Record, error) {
	r, err := c.b.store.Get(ctx, key)
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, idem.ErrNotFound) {
		return r, fmt.Errorf("reading %s: %w", key, err)
	}
	if c.b.kind != "redis" {
		var found *idemstore.Record
		lerr := c.b.admin.List(ctx, key, func(r idemstore.Record) error {
			if r.Key == key {
				found = &r
			}
			return nil
		})
		if found != nil {
			return *found, nil
		}
		if lerr != nil && !errors.Is(lerr, idem.ErrCorruptRecord) {
			return idemstore.Record{}, fmt.Errorf("reading %s: %w", key, lerr)
		}
	}
	return idemstore.Record{}, fmt.Errorf("%w: %s has no record (wrong -prefix or store, or it expired)", errNotFound, key)
}

func showCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	withResult := fs.Bool("result", false, "also print the stored result (or recorded error) bytes")
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 1, "one KEY"); err != nil {
			return err
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		r, err := c.lookup(ctx, args[0])
		if err != nil {
			return err
		}
		sealed, err := c.openRecords(&r)
		if err != nil {
			return err
		}
		v := c.view(r)
		v.Sealed = sealed
		body := recordBody(r.Result)
		if r.State == idemstore.StateFailed {
			var fr struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(body, &fr) == nil {
				v.Error = fr.Message
			}
		}
		if *withResult && len(body) > 0 {
			v.Result = rawResult(body)
		}
		v.Steps = steps(r, *withResult)
		if c.opts.json {
			return c.printJSON(v)
		}
		tw := c.table()
		row := func(k, val string) { fmt.Fprintf(tw, "%s\t%s\n", k, val) }
		row("key", v.Key)
		row("function", v.Func)
		row("version", strconv.Itoa(v.Version))
		row("state", v.status())
		row("owner", dash(v.Owner))
		row("fence", strconv.FormatUint(v.Fence, 10))
		row("lease until", c.when(v.LeaseUntil))
		row("expires at", c.when(v.ExpiresAt))
		row("claimed", c.when(v.ClaimedAt))
		row("updated", c.when(v.UpdatedAt))
		row("result size", strconv.Itoa(v.ResultSize)+" bytes")
		row("fingerprint", v.Fingerprint)
		if v.Error != "" {
			row("error", v.Error)
		}
		if v.Sealed {
			row("result", "sealed (give its keyring: $IDEMCTL_KEYRING or -keyring-file)")
		} else if *withResult && len(body) > 0 {
			row("result", resultText(body))
		}
		for _, s := range v.Steps {
			line := fmt.Sprintf("%s (%d bytes)", s.Name, s.Size)
			if *withResult {
				line += " " + resultText(recordBody(r.Steps[s.Name]))
			}
			row("step", line)
		}
		return tw.Flush()
	}
}

// resultText prints result bytes: as they are when they are UTF-8 text,
// else quoted.
func resultText(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsAny(string(b), "\n\r\t") {
		return string(b)
	}
	return strconv.Quote(string(b))
}

// when prints a time with how far it is from the store's now.
func (c *cmdCtx) when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := t.Sub(c.now).Round(time.Second)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (in %s)", t.Format(time.RFC3339Nano), d)
	case d < 0:
		return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339Nano), -d)
	}
	return t.Format(time.RFC3339Nano) + " (now)"
}

func releaseCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	force := fs.Bool("force", false, "release even a completed key (its stored result is forgotten: the next call runs the function again)")
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 1, "one KEY"); err != nil {
			return err
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		key := args[0]
		before, err := c.lookup(ctx, key)
		if err != nil {
			return err
		}
		if before.State == idemstore.StateCompleted && !*force {
			return fmt.Errorf("%s is completed: releasing it forgets its result, so the next call runs the function again; pass -force if that is what you want", key)
		}
		after, err := c.b.admin.ForceRelease(ctx, key)
		if errors.Is(err, idem.ErrNotFound) {
			return fmt.Errorf("%w: %s has no record (it expired or was deleted meanwhile)", errNotFound, key)
		}
		if err != nil {
			return fmt.Errorf("releasing %s: %w", key, err)
		}
		b, a := c.view(before), c.view(after)
		if c.opts.json {
			return c.printJSON(struct {
				Before view `json:"before"`
				After  view `json:"after"`
			}{b, a})
		}
		fmt.Fprintf(c.stdout, "released %s\n", key)
		tw := c.table()
		fmt.Fprintf(tw, "  before\t%s\tfence %d\towner %s\n", b.status(), b.Fence, dash(b.Owner))
		fmt.Fprintf(tw, "  after\t%s\tfence %d\towner %s\n", a.status(), a.Fence, dash(a.Owner))
		if err := tw.Flush(); err != nil {
			return err
		}
		if before.State == idemstore.StateInProgress {
			fmt.Fprintf(c.stdout, "The old owner's heartbeats and completion now fail with idem.ErrLeaseLost (its result is not stored);\nthe next call of this key runs the function again with fence %d or higher.\n", a.Fence+1)
		}
		return nil
	}
}

func deleteCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	force := fs.Bool("force", false, "delete even an in-progress record (prefer release: deleting restarts the key's fences at 1)")
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 1, "one KEY"); err != nil {
			return err
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		key := args[0]
		before, err := c.lookup(ctx, key)
		corrupt := errors.Is(err, idem.ErrCorruptRecord)
		if err != nil && !corrupt {
			return err
		}
		if corrupt {
			// Delete is the way out for a value the store cannot decode.
			before = idemstore.Record{Key: key}
		}
		if before.State == idemstore.StateInProgress && !*force {
			return fmt.Errorf("%s is in progress (fence %d): deleting it lets the next owner start again at fence 1, which a still-running owner may also hold; use 'idemctl release' (fenced), or pass -force", key, before.Fence)
		}
		if err := c.b.store.Delete(ctx, key); err != nil {
			if errors.Is(err, idem.ErrNotFound) {
				return fmt.Errorf("%w: %s has no record (it expired or was deleted meanwhile)", errNotFound, key)
			}
			return fmt.Errorf("deleting %s: %w", key, err)
		}
		v := c.view(before)
		if corrupt {
			v.State = "corrupt"
		}
		if c.opts.json {
			return c.printJSON(struct {
				Deleted view `json:"deleted"`
			}{v})
		}
		if corrupt {
			fmt.Fprintf(c.stdout, "deleted %s (was a corrupt record)\n", key)
			return nil
		}
		fmt.Fprintf(c.stdout, "deleted %s (was %s, fence %d)\n", key, v.status(), v.Fence)
		return nil
	}
}

// statsRow counts one function version's records; each record counts in
// exactly one column.
type statsRow struct {
	Func    string `json:"func"`
	Version int    `json:"version"`
	// InProgress: owners holding a live lease.
	InProgress int `json:"in_progress"`
	// LeaseExpired: in progress, lease over (owner died or stalled); the
	// next call takes over.
	LeaseExpired int `json:"lease_expired"`
	Completed    int `json:"completed"`
	Failed       int `json:"failed"`
	Released     int `json:"released"`
	// Expired: no longer live, waiting for cleanup.
	Expired int `json:"expired"`
	Total   int `json:"total"`
}

func (s *statsRow) add(v *view) {
	s.Total++
	switch {
	case !v.Live:
		s.Expired++
	case v.LeaseExpired:
		s.LeaseExpired++
	case v.State == "in_progress":
		s.InProgress++
	case v.State == "completed":
		s.Completed++
	case v.State == "failed":
		s.Failed++
	case v.State == "released":
		s.Released++
	}
}

func statsCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	fn := fs.String("func", "", "only this function: its name= or importpath.Func, or the end of it after a '.' or '/' (ChargeCard)")
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 0, ""); err != nil {
			return err
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		type fv struct {
			f string
			v int
		}
		rows := map[fv]*statsRow{}
		err := c.listFunc(ctx, *fn, func(r idemstore.Record) error {
			v := c.view(r)
			k := fv{v.Func, v.Version}
			s := rows[k]
			if s == nil {
				s = &statsRow{Func: v.Func, Version: v.Version}
				rows[k] = s
			}
			s.add(&v)
			return nil
		})
		if err != nil && !errors.Is(err, idem.ErrCorruptRecord) {
			return fmt.Errorf("listing records: %w", err)
		}
		if len(rows) == 0 && err == nil {
			c.prefixHint(ctx)
		}
		out := make([]statsRow, 0, len(rows))
		for _, s := range rows {
			out = append(out, *s)
		}
		slices.SortFunc(out, func(a, b statsRow) int {
			if c := strings.Compare(a.Func, b.Func); c != 0 {
				return c
			}
			return a.Version - b.Version
		})
		if c.opts.json {
			if perr := c.printJSON(out); perr != nil {
				return perr
			}
		} else {
			tw := c.table()
			fmt.Fprintln(tw, "FUNCTION\tVERSION\tIN_PROGRESS\tLEASE_EXPIRED\tCOMPLETED\tFAILED\tRELEASED\tEXPIRED\tTOTAL")
			var t statsRow
			for _, s := range out {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Func, s.Version, s.InProgress, s.LeaseExpired, s.Completed, s.Failed, s.Released, s.Expired, s.Total)
				t.InProgress += s.InProgress
				t.LeaseExpired += s.LeaseExpired
				t.Completed += s.Completed
				t.Failed += s.Failed
				t.Released += s.Released
				t.Expired += s.Expired
				t.Total += s.Total
			}
			fmt.Fprintf(tw, "TOTAL\t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", t.InProgress, t.LeaseExpired, t.Completed, t.Failed, t.Released, t.Expired, t.Total)
			if ferr := tw.Flush(); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return fmt.Errorf("listing records: %w", err)
		}
		return nil
	}
}

func cleanupCmd(c *cmdCtx, fs *flag.FlagSet) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		if err := wantArgs(args, 0, ""); err != nil {
			return err
		}
		if err := c.connect(ctx); err != nil {
			return err
		}
		defer c.close()
		n, err := c.b.admin.Cleanup(ctx)
		if err != nil {
			return fmt.Errorf("cleanup (after removing %d records): %w", n, err)
		}
		if c.opts.json {
			return c.printJSON(struct {
				Removed int `json:"removed"`
			}{n})
		}
		fmt.Fprintf(c.stdout, "removed %d records that were no longer live\n", n)
		return nil
	}
}
