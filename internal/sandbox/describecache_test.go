package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kindgi/packd/internal/sandbox"
)

// describeIn compiles the describeline fixture in a sandbox over dir and
// describes it; what it wrote is in the returned buffer once the sandbox
// is closed.
func describeIn(t *testing.T, cfg sandbox.Config) (sandbox.Description, int32, error, *syncBuffer) {
	t.Helper()
	var stderr syncBuffer
	cfg.Stderr = &stderr
	sb := newSandbox(t, cfg)
	m := compile(t, sb, hostile("describeline"))
	d, err := m.Describe(context.Background())
	_ = sb.Close(context.Background()) // flushes the lines
	return d, m.ABIVersion(), err, &stderr
}

// A boot of an unchanged module takes its description from the cache
// (start, _initialize and kindgi_describe ran at every boot: 14 ms of CPU
// a Go module): the same answer and ABI version, the line it wrote
// written again, and the guest not run.
func TestAnUnchangedModuleIsNotDescribedAgain(t *testing.T) {
	dir := t.TempDir()
	first, v1, err, out1 := describeIn(t, sandbox.Config{CacheDir: dir})
	if err != nil || !reflect.DeepEqual(first.Tools, []string{"hostile.describeline"}) || v1 != 1 || out1.String() != "described\n" {
		t.Fatalf("first description: %+v v%d %v, wrote %q", first, v1, err, out1.String())
	}
	runs := sandbox.DescribeRuns()
	again, v2, err, out2 := describeIn(t, sandbox.Config{CacheDir: dir})
	if err != nil || !reflect.DeepEqual(again, first) || v2 != v1 || out2.String() != "described\n" {
		t.Fatalf("from the cache: %+v v%d %v, wrote %q", again, v2, err, out2.String())
	}
	if n := sandbox.DescribeRuns() - runs; n != 0 {
		t.Fatalf("the unchanged module was described %d more times", n)
	}
}

// A kept description is used only within the load fuel it burnt: a boot
// with less runs it again and refuses the module, as it would have
// without the cache.
func TestALowerLoadFuelDescribesAgain(t *testing.T) {
	dir := t.TempDir()
	if _, _, err, _ := describeIn(t, sandbox.Config{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	runs := sandbox.DescribeRuns()
	_, _, err, _ := describeIn(t, sandbox.Config{CacheDir: dir, LoadFuel: 5_000})
	if !errors.Is(err, sandbox.ErrLoadLimit) || sandbox.DescribeRuns() == runs {
		t.Fatalf("under 5,000 load fuel: %v, described again: %v", err, sandbox.DescribeRuns() != runs)
	}
}

// A kept description changed on disk (the tools it serves rewritten, its
// seal left) is not used: the module is described again, and answers
// what it serves.
func TestATamperedDescriptionIsNotUsed(t *testing.T) {
	dir := t.TempDir()
	if _, _, err, _ := describeIn(t, sandbox.Config{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "packd-pass", "*", "*.describe"))
	if len(kept) != 1 {
		t.Fatalf("kept descriptions %v, want one", kept)
	}
	b, err := os.ReadFile(kept[0])
	if err != nil {
		t.Fatal(err)
	}
	tampered := strings.Replace(string(b), `"hostile.describeline"`, `"hostile.describelinX"`, 1)
	if tampered == string(b) {
		t.Fatalf("the kept description does not hold the tool's id: %q", b)
	}
	if err := os.WriteFile(kept[0], []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := sandbox.DescribeRuns()
	d, _, err, _ := describeIn(t, sandbox.Config{CacheDir: dir})
	if err != nil || !reflect.DeepEqual(d.Tools, []string{"hostile.describeline"}) || sandbox.DescribeRuns() == runs {
		t.Fatalf("after tampering: %+v %v, described again: %v", d, err, sandbox.DescribeRuns() != runs)
	}
}
