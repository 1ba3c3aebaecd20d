package idemprom_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/idemgen/idemgen/internal/testenv"
)

// TestOperationsAlertRules checks the alert rules and queries documented
// in docs/OPERATIONS.md with promtool: the rules load, and on scripted
// series (testdata/alerts_test.yml) each alert fires for the function it
// should and the replay-rate and stuck-lease queries give the expected
// values. It needs promtool (Debian: apt-get install prometheus).
func TestOperationsAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	testenv.Need(t, "promtool", "install it with scripts/tools.sh (Debian package prometheus); make test does", err)
	doc, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(groups:.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no ```yaml groups: block in docs/OPERATIONS.md")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "idem-rules.yml"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "idem-rules.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
