package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/server"
)

// devQuiet is how long a pack's files must stay unchanged after a change
// before packd dev builds: an editor's save, a git checkout, are many
// events.
const devQuiet = 200 * time.Millisecond

const devUsage = `usage: packd dev [serve flags] DIR

Serves the pack in DIR (its index.json) on 127.0.0.1, and rebuilds and
reloads it whenever its files change: it runs the pack's own make (with
PACKD set to this packd), which builds the module and writes the index,
then reloads the pack in the process. A kindgi-shaped TypeScript pack
(no Makefile; tools/ and guardrails/) is built with packd build-ts and
packd index instead. A build or load that fails is
printed, with its file and line, and the last good pack goes on serving.
Files the pack's .gitignore names (what make writes), hidden directories,
node_modules and records (recorded calls: packd replay) are not watched.
The token is $KINDGI_PACK_SERVICE_TOKEN, else a new one, printed. The flags are packd serve's (packd serve -h).
`

// devCmd is packd dev.
func devCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[len(args)-1] == "-h" || args[len(args)-1] == "--help") {
		fmt.Fprint(stdout, devUsage)
		return exitOK
	}
	if len(args) == 0 || strings.HasPrefix(args[len(args)-1], "-") {
		fmt.Fprint(stderr, "packd dev: the pack's directory is missing\n"+devUsage)
		return exitUsage
	}
	dir, flags := args[len(args)-1], args[:len(args)-1]
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "packd dev: %s is not a directory\n", dir)
		return exitUsage
	}
	d, err := newDevPack(dir, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "packd dev: %v\n", err)
		return exitError
	}
	defer d.close()
	token := strings.TrimSpace(os.Getenv(tokenEnv))
	if token == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		token = hex.EncodeToString(b)
		fmt.Fprintf(stdout, "packd dev: the token is %s (set %s to choose it)\n", token, tokenEnv)
	}
	getenv := func(name string) string {
		switch v := os.Getenv(name); {
		case name == tokenEnv:
			return token
		case name == "KINDGI_PACK_INDEX" && v == "":
			return filepath.Join(dir, "index.json")
		default:
			return v
		}
	}
	flags = append([]string{"--host", "127.0.0.1"}, flags...)
	for {
		// A stop during the build stops it (and what make started).
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		built := d.build(ctx)
		stopped := ctx.Err() != nil
		stop() // which cancels ctx too
		if stopped {
			return exitOK
		}
		if built {
			code, loadErr := serveWith(flags, getenv, stdout, stderr, d.watch)
			if loadErr == nil {
				return code
			}
			d.problems("the pack did not load", loadErr)
		}
		// Nothing serves yet: wait for a change, or for the user to stop.
		ctx, stop = signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		changed := d.wait(ctx)
		stop()
		if !changed {
			return exitOK
		}
	}
}

// devPack is the pack packd dev builds and watches.
type devPack struct {
	dir, index string
	self       string // this packd, for the Makefile's PACKD
	makefile   bool
	kindgi     bool     // no Makefile, tools/ and guardrails/: build-ts builds it
	ignore     []string // the .gitignore's patterns (outputs of make)
	w          *fsnotify.Watcher
	out        io.Writer
	base       [32]byte // the files as the last build left them
	again      bool     // a source changed during the last build
}

func newDevPack(dir string, out io.Writer) (*devPack, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	d := &devPack{dir: dir, index: filepath.Join(dir, "index.json"), self: self, out: out}
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err == nil {
		d.makefile = true
		if _, err := exec.LookPath("make"); err != nil {
			return nil, errors.New("the pack has a Makefile, and make is not installed (Debian: apt-get install make)")
		}
		d.ignore = gitignored(filepath.Join(dir, ".gitignore"))
	} else if _, err := discoverKindgi(dir); err == nil {
		// A kindgi-shaped TypeScript pack: packd build-ts and packd index
		// build it; what they write is not a change.
		d.kindgi = true
		d.ignore = append(gitignored(filepath.Join(dir, ".gitignore")), "build/", "*.wasm")
		fmt.Fprintf(out, "packd dev: %s is a kindgi-shaped pack (tools/, guardrails/): packd build-ts builds it\n", dir)
	} else {
		fmt.Fprintf(out, "packd dev: %s has no Makefile: packd dev reloads its files as they are\n", dir)
	}
	if d.w, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	if err := d.watchTree(dir); err != nil {
		d.w.Close()
		return nil, err
	}
	return d, nil
}

func (d *devPack) close() { _ = d.w.Close() }

// gitignored reads the patterns of a .gitignore: names and globs of a
// file or (with a trailing /) a directory; negations and comments are
// skipped.
func gitignored(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var pats []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "!") {
			pats = append(pats, strings.TrimPrefix(l, "/"))
		}
	}
	return pats
}

// skipped says whether a file or directory of the pack is not watched.
func (d *devPack) skipped(rel string, dir bool) bool {
	name := filepath.Base(rel)
	if dir && rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || rel == "records") {
		return true
	}
	for _, p := range d.ignore {
		isDir := strings.HasSuffix(p, "/")
		if isDir && !dir {
			continue
		}
		p = strings.TrimSuffix(p, "/")
		target := name
		if strings.Contains(p, "/") {
			target = filepath.ToSlash(rel)
		}
		if ok, _ := filepath.Match(p, target); ok {
			return true
		}
	}
	return false
}

// watchTree watches root and every directory under it that is not skipped.
func (d *devPack) watchTree(root string) error {
	return filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(d.dir, p)
		if d.skipped(rel, true) {
			return filepath.SkipDir
		}
		return d.w.Add(p)
	})
}

// fingerprint hashes the watched files' paths and contents (all of them,
// or those but the index), so that a build that writes what was there
// already, or an editor that saves what it read, changes nothing.
func (d *devPack) fingerprint(withIndex bool) [32]byte {
	h := sha256.New()
	_ = filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(d.dir, p)
		if d.skipped(rel, e.IsDir()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || (!withIndex && p == d.index) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s\x00%x\x00", rel, sum)
		return nil
	})
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// build runs the pack's make, its output going to the user as it comes,
// and says whether it succeeded; ctx done stops it.
func (d *devPack) build(ctx context.Context) bool {
	defer func() { d.base = d.fingerprint(true) }()
	if d.kindgi {
		return d.buildKindgi()
	}
	if !d.makefile {
		return true
	}
	before := d.fingerprint(false)
	began := time.Now()
	fmt.Fprintf(d.out, "packd dev: make (in %s)\n", d.dir)
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "PACKD="+d.self)
	cmd.Dir, cmd.Stdout, cmd.Stderr = d.dir, d.out, d.out
	ownGroup(cmd)
	cmd.WaitDelay = 5 * time.Second // then killed, output or not
	err := cmd.Run()
	// make writes the index and what .gitignore names; anything else that
	// changed meanwhile is an edit this build may have missed.
	d.again = d.fingerprint(false) != before
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(d.out, "packd dev: the build was stopped\n")
		return false
	}
	if err != nil {
		fmt.Fprintf(d.out, "packd dev: the build failed (%v): fix it, and packd dev builds again on the next change; the last good pack goes on serving\n", err)
		return false
	}
	fmt.Fprintf(d.out, "packd dev: built in %.1fs\n", time.Since(began).Seconds())
	return true
}

// buildKindgi builds a kindgi-shaped pack as its make would: packd
// build-ts, then packd index (the pack's id: its package.json name).
func (d *devPack) buildKindgi() bool {
	began := time.Now()
	fmt.Fprintf(d.out, "packd dev: packd build-ts %s\n", d.dir)
	module := filepath.Join(d.dir, "pack.wasm")
	if buildTSCmd([]string{"-o", module, d.dir}, d.out, d.out) != exitOK {
		fmt.Fprintf(d.out, "packd dev: the build failed: fix it, and packd dev builds again on the next change; the last good pack goes on serving\n")
		return false
	}
	var pkg struct{ Name string }
	if b, err := os.ReadFile(filepath.Join(d.dir, "package.json")); err == nil {
		_ = json.Unmarshal(b, &pkg)
	}
	id := packName(pkg.Name)
	if id == "" {
		abs, _ := filepath.Abs(d.dir)
		id = packName(filepath.Base(abs))
	}
	if indexCmd([]string{"--index", d.index, "--pack-id", id, module}, d.out, d.out) != exitOK {
		fmt.Fprintf(d.out, "packd dev: packd index failed: the last good pack goes on serving\n")
		return false
	}
	fmt.Fprintf(d.out, "packd dev: built in %.1fs\n", time.Since(began).Seconds())
	return true
}

// wait returns true once the pack's files have changed since the last
// build (and stayed unchanged for devQuiet), false when ctx is done.
func (d *devPack) wait(ctx context.Context) bool {
	if d.again {
		d.again = false
		return true
	}
	for {
		var quiet <-chan time.Time
		for changed := false; ; {
			select {
			case <-ctx.Done():
				return false
			case ev, ok := <-d.w.Events:
				if !ok {
					return false
				}
				if ev.Has(fsnotify.Create) {
					if st, err := os.Stat(ev.Name); err == nil && st.IsDir() {
						_ = d.watchTree(ev.Name)
					}
				}
				changed = true
				quiet = time.After(devQuiet)
				continue
			case err, ok := <-d.w.Errors:
				if !ok {
					return false
				}
				fmt.Fprintf(d.out, "packd dev: watching %s: %v\n", d.dir, err)
				continue
			case <-quiet:
			}
			if changed {
				break
			}
		}
		if d.fingerprint(true) != d.base {
			return true
		}
	}
}

// watch rebuilds and reloads the pack served at every change, until ctx
// is done (serveWith's beside).
func (d *devPack) watch(ctx context.Context, svc *server.Running) {
	fmt.Fprintf(d.out, "packd dev: serving http://%s: POST /v1/invoke (kindgi-pack-token), and MCP at /mcp (Authorization: Bearer)\n", svc.Addr())
	for d.wait(ctx) {
		if !d.build(ctx) {
			continue
		}
		if err := svc.Reload(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			le := &host.LoadError{Problems: []string{err.Error()}}
			errors.As(err, &le)
			d.problems("the pack did not reload; the last good pack goes on serving", le)
			continue
		}
		fmt.Fprintf(d.out, "packd dev: serving the new build\n")
	}
}

// jsonAt is where a JSON syntax problem says it is.
var jsonAt = regexp.MustCompile(`at line (\d+), column (\d+)$`)

// problems prints load problems one a line, each with its file: the
// index's, with its line and column where the problem has them, or the
// module's its text begins with.
func (d *devPack) problems(what string, le *host.LoadError) {
	fmt.Fprintf(d.out, "packd dev: %s:\n", what)
	for _, p := range le.Problems {
		where := d.index
		if m := jsonAt.FindStringSubmatch(p); m != nil {
			where += ":" + m[1] + ":" + m[2]
		}
		if mod, _, ok := strings.Cut(p, ": "); ok && slices.ContainsFunc([]string{".wasm", ".js"}, func(ext string) bool { return strings.HasSuffix(mod, ext) }) {
			where = filepath.Join(d.dir, mod)
			p = strings.TrimPrefix(p, mod+": ")
		}
		fmt.Fprintf(d.out, "%s: %s\n", where, p)
	}
}
