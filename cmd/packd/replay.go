package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
)

// replayCmd replays recorded calls offline (replay.Replayer) and says, for
// each, whether it gave the recorded output and fuel, or where it first
// departed. It never touches the network.
func replayCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("packd replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var index, moduleRoot, module, secretsFile, cacheDir, extract string
	var verbose bool
	var timeout time.Duration
	fs.StringVar(&index, "index", os.Getenv("KINDGI_PACK_INDEX"), "find each record's module among this index's modules: by its hash, else by its path (default $KINDGI_PACK_INDEX)")
	fs.StringVar(&moduleRoot, "module-root", "", "where the index's module paths resolve (default: the index's directory)")
	fs.StringVar(&module, "module", "", "replay every record on this module instead (a changed module shows where it departs)")
	fs.StringVar(&secretsFile, "secrets", "", `a JSON object of the ctx.secrets the records hold only hashes of, by name ({"apiKey": "…"}); environment values come from packd's own environment`)
	fs.StringVar(&cacheDir, "cache-dir", defaultCacheDir(os.Getenv), `wazero's compilation cache ("" keeps it in memory)`)
	fs.BoolVar(&verbose, "v", false, "say what each identical replay did too")
	fs.StringVar(&extract, "extract", "", "write each record named into this directory as a file of its own (a segment's, SEGMENT.jsonl:LINE, to keep as a test), instead of replaying")
	fs.DurationVar(&timeout, "timeout", time.Minute, "longest one record's replay may take (a changed module may not end where the recorded one did)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: packd replay [--index I | --module M] [--secrets FILE] RECORD|SEGMENT[:LINE]|DIR ...\n       packd replay --extract DIR RECORD|SEGMENT[:LINE]|DIR ...\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "packd replay: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() == 0 {
		return usageErr("name the records to replay: files, or directories of them")
	}
	if err := onDisk("replay", index); err != nil {
		return usageErr("%v", err)
	}
	if timeout <= 0 {
		return usageErr("--timeout must be positive")
	}
	files, err := recordFiles(fs.Args())
	if err != nil {
		return usageErr("%v", err)
	}
	if extract != "" {
		return extractRecords(files, extract, stdout, stderr)
	}
	if (index == "") == (module == "") {
		return usageErr("say where the modules are: --index INDEX (each record's module among its modules) or --module PATH")
	}
	secrets := map[string]string{}
	if secretsFile != "" {
		b, err := os.ReadFile(secretsFile)
		if err == nil {
			err = json.Unmarshal(b, &secrets)
		}
		if err != nil {
			return usageErr("--secrets %s: %v (a JSON object of strings)", secretsFile, err)
		}
	}
	modules := &moduleFinder{module: module, index: index, root: moduleRoot, bytes: map[string][]byte{}, sums: map[string]string{}}
	if cacheDir != "" && cacheUsable(cacheDir) != nil {
		cacheDir = ""
	}
	rp := replay.NewReplayer(replay.Config{
		// Linear memory is bounded as packd serve's is by default (a record
		// names its own memory limit, up to wasm32's 4 GiB).
		Sandbox: sandbox.Config{CacheDir: cacheDir, Stdout: io.Discard, Stderr: io.Discard, MemoryBudget: defaultMemoryBudget(nil) / 2},
		Secret: func(name string) (string, bool) {
			if env, ok := strings.CutPrefix(name, "env."); ok {
				return os.LookupEnv(env)
			}
			v, ok := secrets[strings.TrimPrefix(name, "ctx.secrets.")]
			return v, ok
		},
	})
	defer rp.Close(context.Background())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	same, differ := 0, 0
	tally := func(name string, rec *replay.Record, err error) bool {
		ok := false
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, timeout)
			ok, err = replayOne(rctx, rp, modules, name, rec, verbose, stdout)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("the replay did not end within --timeout %v", timeout)
			}
		}
		if err != nil {
			fmt.Fprintf(stdout, "FAILED     %s: %v\n", name, err)
		}
		if ok {
			same++
		} else {
			differ++
		}
		return ctx.Err() == nil
	}
	for _, f := range files {
		if !eachRecord(f, tally) {
			break
		}
	}
	fmt.Fprintf(stdout, "%d of %d records replayed identically\n", same, same+differ)
	if differ > 0 {
		return exitError
	}
	return exitOK
}

// readRecord reads a record file.
func readRecord(file string) (*replay.Record, error) {
	data, err := readBounded(file, maxRecordFile, "a record")
	if err != nil {
		return nil, err
	}
	return replay.Read(data)
}

// eachRecord hands each record f names to do (a record file's; a
// segment's, each named file:line; SEGMENT:LINE's one) while do answers
// true; it answers false when do stopped.
func eachRecord(f string, do func(string, *replay.Record, error) bool) bool {
	file, only := segmentLine(f)
	if !strings.HasSuffix(file, replay.SegmentExt) {
		rec, err := readRecord(f)
		return do(f, rec, err)
	}
	st, err := os.Stat(file)
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s), so not a segment", st.Mode().Type())
	}
	var fh *os.File
	if err == nil {
		fh, err = os.Open(file)
	}
	if err != nil {
		return do(f, nil, err)
	}
	defer fh.Close()
	found := false
	for r := range replay.ReadSegment(fh, maxRecordFile) {
		if only > 0 && r.Line != only {
			continue
		}
		found = true
		if !do(fmt.Sprintf("%s:%d", file, r.Line), r.Record, r.Err) {
			return false
		}
		if only > 0 {
			break
		}
	}
	if only > 0 && !found {
		return do(f, nil, fmt.Errorf("%s has no record at line %d", file, only))
	}
	return true
}

// segmentLine splits SEGMENT.jsonl:LINE (a record of a segment) into the
// segment and the line; anything else is itself, line 0.
func segmentLine(arg string) (string, int) {
	i := strings.LastIndexByte(arg, ':')
	if i < 0 || !strings.HasSuffix(arg[:i], replay.SegmentExt) {
		return arg, 0
	}
	n, err := strconv.Atoi(arg[i+1:])
	if err != nil || n < 1 {
		return arg, 0
	}
	return arg[:i], n
}

// extractRecords writes every record files names into dir as a file of
// its own (replay.WriteFile: a record file's whole tape included), and
// says where each went.
func extractRecords(files []string, dir string, stdout, stderr io.Writer) int {
	code := exitOK
	for _, f := range files {
		eachRecord(f, func(name string, rec *replay.Record, err error) bool {
			var path string
			if err == nil {
				path, err = replay.WriteFile(dir, rec)
			}
			if err != nil {
				fmt.Fprintf(stderr, "packd replay: %s: %v\n", name, err)
				code = exitError
				return true
			}
			fmt.Fprintf(stdout, "%s: %s\n", name, path)
			return true
		})
	}
	return code
}

// replayOne replays one record and says what it found.
func replayOne(ctx context.Context, rp *replay.Replayer, modules *moduleFinder, file string, rec *replay.Record, verbose bool, w io.Writer) (bool, error) {
	wasm, where, err := modules.find(rec)
	if err != nil {
		return false, err
	}
	got, err := rp.Replay(ctx, rec, wasm)
	if err != nil {
		return false, err
	}
	what := fmt.Sprintf("%s %s", rec.Target, rec.ID)
	if got.Identical() {
		fmt.Fprintf(w, "identical  %s: %s, fuel %d\n", file, what, got.Result.Fuel)
		if verbose {
			fmt.Fprintf(w, "           %d host answers, snapshot %s, module %s\n", len(rec.Tape), orNone(got.SnapshotID), where)
		}
		return true, nil
	}
	fmt.Fprintf(w, "DIFFERENT  %s: %s\n", file, what)
	if got.Divergence != nil {
		in := "the call"
		if got.InInit {
			in = "the snapshot's initialisation"
		}
		fmt.Fprintf(w, "           in %s, %v\n", in, got.Divergence)
	}
	for _, d := range got.Differences {
		fmt.Fprintf(w, "           %s\n", d)
	}
	if got.ModuleChanged {
		fmt.Fprintf(w, "           the module %s is %s, the recorded one %s\n", where, got.ModuleSHA256, rec.Module.SHA256)
	}
	if got.SnapshotChanged {
		fmt.Fprintf(w, "           the snapshot rebuilt is %s, the recorded one %s\n", got.SnapshotID, rec.Snapshot.ID)
	}
	if len(got.Placeholders) > 0 {
		fmt.Fprintf(w, "           not supplied (the guest saw placeholders): %s\n", strings.Join(got.Placeholders, ", "))
	}
	return false, nil
}

// maxRecordFile bounds a record file packd replay reads: a record holds at
// most 4 MiB of a call's host answers and as much of its snapshot's, as
// JSON (base64 included).
const maxRecordFile = 32 << 20

// readBounded reads a regular file of at most limit bytes (what it is: "a
// record"): a FIFO or a device, whose reading would wait for ever or never
// end, is refused before it is opened.
func readBounded(path string, limit int64, what string) ([]byte, error) {
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s), so not %s", st.Mode().Type(), what)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("larger than %s can be (%d MiB)", what, limit>>20)
	}
	return b, err
}

func orNone(s string) string {
	if s == "" {
		return "none (a fresh instance)"
	}
	return s
}

// recordFiles are the record files args name: files, and the .json files
// and segments (.jsonl) under directories (hidden ones left out), in name
// order.
func recordFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		if seg, line := segmentLine(a); line > 0 {
			if _, err := os.Stat(seg); err != nil {
				return nil, err
			}
			files = append(files, a)
			continue
		}
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		n := len(files)
		err = filepath.WalkDir(a, func(p string, e fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case p != a && strings.HasPrefix(e.Name(), "."):
				if e.IsDir() {
					return filepath.SkipDir
				}
			case e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".json") || strings.HasSuffix(e.Name(), replay.SegmentExt)):
				files = append(files, p) // a FIFO or device of that name is no record
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(files) == n {
			return nil, fmt.Errorf("%s holds no records (.json files or .jsonl segments)", a)
		}
	}
	return files, nil
}

// moduleFinder finds the module a record names: the one --module names,
// else among the index's modules the one of the record's hash, else the
// one at the record's path. It reads each module once, as Load does.
type moduleFinder struct {
	module, index, root string
	bytes               map[string][]byte // by path
	sums                map[string]string // by path: the bytes' hashes
	paths               []string          // the index's module paths
}

func (f *moduleFinder) read(p string) ([]byte, error) {
	if b, ok := f.bytes[p]; ok {
		return b, nil
	}
	var b []byte
	var err error
	if f.module != "" { // the operator's own path, links and all
		b, err = readBounded(p, sandbox.DefaultMaxModuleBytes, "a module")
	} else {
		b, err = host.ReadModuleFile(f.root, p)
	}
	if err != nil {
		return nil, err
	}
	f.bytes[p] = b
	return b, nil
}

func (f *moduleFinder) find(rec *replay.Record) ([]byte, string, error) {
	if f.module != "" {
		b, err := f.read(f.module)
		return b, f.module, err
	}
	if f.paths == nil {
		data, err := os.ReadFile(f.index)
		if err != nil {
			return nil, "", err
		}
		idx, problems := host.ValidateIndex(data)
		if idx == nil || len(idx.Tools)+len(idx.Guardrails) == 0 {
			return nil, "", fmt.Errorf("%s: %s", f.index, strings.Join(problems, "; "))
		}
		if f.root == "" {
			f.root = filepath.Dir(f.index)
		}
		f.paths = idx.ModulePaths()
	}
	for _, p := range f.paths {
		b, err := f.read(p)
		if err != nil {
			continue
		}
		if _, ok := f.sums[p]; !ok {
			f.sums[p] = replay.ContentHash(b)
		}
		if f.sums[p] == rec.Module.SHA256 {
			return b, p, nil
		}
	}
	if slices.Contains(f.paths, rec.Module.Path) {
		b, err := f.read(rec.Module.Path)
		return b, rec.Module.Path, err
	}
	return nil, "", errors.New("the index has no module of the recorded hash " + rec.Module.SHA256 + " or path " + rec.Module.Path)
}
