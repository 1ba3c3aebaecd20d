package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"idemctl": main,
		// idemctl-seed DIR fills a file store the way an application
		// would, at a fixed time (so the listing is byte-stable), and exits
		// in the middle of a call, leaving its record in progress as a
		// crashed owner does.
		"idemctl-seed": func() { os.Exit(seed(os.Args[1])) },
	})
}

// seedTime is far enough ahead that the seeded leases are live whenever
// the test runs: idemctl judges them by the real clock.
var seedTime = time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)

func seed(dir string) int {
	st, err := filestore.New(dir, filestore.WithClock(func() time.Time { return seedTime }), filestore.WithoutSync())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g := idem.NewGuard(st)
	do := func(spec *idem.Spec, fn func(context.Context) (string, error)) error {
		c, k := idemimpl.Begin(g, spec)
		k.Key().String("a")
		_, err := idem.Do(context.Background(), c, fn)
		return err
	}
	if err := do(&idem.Spec{Name: "test.Charge"}, func(context.Context) (string, error) { return "receipt-a", nil }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	do(&idem.Spec{Name: "test.Refund", OnFailure: idem.FailureLock}, func(context.Context) (string, error) { return "", errors.New("card declined") }) //nolint:errcheck
	do(&idem.Spec{Name: "test.Notify"}, func(context.Context) (string, error) { return "", errors.New("smtp down") })                                  //nolint:errcheck
	do(&idem.Spec{Name: "test.Ship", Lease: 30 * time.Second}, func(context.Context) (string, error) {
		os.Exit(0) // crash mid-call: the record stays in progress
		return "", nil
	}) //nolint:errcheck
	return 1
}

// TestScripts runs the real command (this test binary re-executed as
// idemctl) on a seeded file store: testdata/*.txtar.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// exitcode N cmd args...: run cmd and require exit status N.
			"exitcode": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: exitcode N cmd args...")
				}
				want, err := strconv.Atoi(args[0])
				ts.Check(err)
				err = ts.Exec(args[1], args[2:]...)
				got := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					got = ee.ExitCode()
				} else if err != nil {
					ts.Fatalf("%v", err)
				}
				if got != want {
					ts.Fatalf("exit status %d, want %d", got, want)
				}
			},
		},
	})
}
