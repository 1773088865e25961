package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/host"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/replay"
	"github.com/kindgi/packd/internal/sandbox"
	"github.com/kindgi/packd/internal/wasmbin"
)

// indexCmd writes a pack's index.json from its modules: each module
// describes its tools and checks (ids, versions, descriptions, schemas,
// limits, network, a guardrail's id, kind, action and severity) and the
// environment names it reads; what the index already says and the modules
// do not (packId, agents, flows, a tool's effects, anything a module
// leaves out) is kept. The index is written
// canonically, so the same modules and index give the same bytes.
func indexCmd(args []string, stdout, stderr io.Writer) int {
	stderr = &syncWriter{w: stderr} // guest lines arrive from a queue's goroutine
	fs := flag.NewFlagSet("packd index", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var lf loadFlags
	lf.register(fs, os.Getenv)
	var packID, packVersion, artifactVersion, publishedAt, out string
	fs.StringVar(&packID, "pack-id", "", "the pack's id (default: the index's)")
	fs.StringVar(&packVersion, "pack-version", "", "the pack's version (default: the index's, else 0.1.0)")
	fs.StringVar(&artifactVersion, "artifact-version", "", "this build's version (default: the index's, else the pack version)")
	fs.StringVar(&publishedAt, "published-at", "", "when it was published, ISO 8601 (default: the index's, else $SOURCE_DATE_EPOCH, else now)")
	fs.StringVar(&out, "o", "", `where to write the index ("-": stdout; default: --index)`)
	digestsFlag := fs.Bool("digests", false, "name each module's SHA-256 in the index (moduleDigests): a module whose bytes differ then does not load, and a signature over the index covers the code (an index that names them goes on naming them)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd index --index index.json [flags] [module.wasm ...]")
		fmt.Fprintln(stderr, "Writes the index from what each module describes; with no modules, those the index names.")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "packd index: "+format+"\n", a...)
		return code
	}
	if lf.index == "" {
		lf.index = "index.json"
	}
	if err := onDisk("index", lf.index); err != nil {
		return fail(exitUsage, "%v", err)
	}
	if out == "" {
		out = lf.index
	}
	root := lf.moduleRoot
	if root == "" {
		root = filepath.Dir(lf.index)
	}

	top := &ojson.Object{}
	if data, err := os.ReadFile(lf.index); err == nil {
		doc, err := ojson.Decode(data)
		if err != nil {
			return fail(exitError, "%s is not valid JSON: %v", lf.index, err)
		}
		var ok bool
		if top, ok = doc.(*ojson.Object); !ok {
			return fail(exitError, "%s is not a JSON object", lf.index)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fail(exitError, "%v", err)
	}
	meta := []struct{ key, flag, def string }{
		{"packId", packID, ""},
		{"packVersion", packVersion, "0.1.0"},
		{"artifactVersion", artifactVersion, ""},
		{"publishedAt", publishedAt, ""},
	}
	for _, m := range meta {
		if m.flag != "" {
			top.Set(m.key, m.flag)
		} else if _, ok := top.Get(m.key); !ok && m.def != "" {
			top.Set(m.key, m.def)
		}
	}
	if _, ok := top.Get("packId"); !ok {
		return fail(exitUsage, "a new index needs --pack-id (e.g. acme.ledger)")
	}
	if _, ok := top.Get("artifactVersion"); !ok {
		v, _ := top.Get("packVersion")
		top.Set("artifactVersion", v)
	}
	if _, ok := top.Get("publishedAt"); !ok {
		top.Set("publishedAt", defaultPublishedAt(os.Getenv("SOURCE_DATE_EPOCH")))
	}
	top.Set("v", 1.0)
	for _, k := range []string{"agents", "flows"} {
		if _, ok := top.Get(k); !ok {
			top.Set(k, []any{})
		}
	}

	modules := fs.Args()
	for i, m := range modules {
		rel, err := filepath.Rel(root, m)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fail(exitUsage, "module %s is not inside the module root %s (set --module-root)", m, root)
		}
		modules[i] = filepath.ToSlash(rel)
	}
	if len(modules) == 0 {
		modules = namedModules(top)
	}
	if len(modules) == 0 {
		return fail(exitUsage, "no modules: name the pack's .wasm files")
	}

	hc, err := lf.config(stderr)
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	if lf.cacheWarning != "" {
		fmt.Fprintln(stderr, "packd index: warning:", lf.cacheWarning)
	}
	ctx := context.Background()
	sb, err := sandbox.New(ctx, hc.Sandbox)
	if err != nil {
		return fail(exitError, "%v", err)
	}
	defer sb.Close(ctx)
	indexTools, indexChecks := entries(top, "tools"), entries(top, "guardrails")
	var tools, guardrails []any
	var env *abi.EnvSpec
	sums := map[string]string{} // each module's digest, as read: what it was described from
	for _, path := range modules {
		wasm, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			return fail(exitError, "%v", err)
		}
		sums[path] = replay.ContentHash(wasm)
		mod, err := sb.Compile(ctx, wasm)
		if err != nil {
			return fail(exitError, "%s: %v", path, err)
		}
		desc, err := mod.Describe(ctx)
		_ = mod.Close(ctx)
		if err != nil {
			lines := abi.ParseLineTable(wasmbin.Custom(wasm, abi.SectionLines))
			return fail(exitError, "%s", lines.Rewrite(fmt.Sprintf("%s: describing module: %v", path, err)))
		}
		t, notes := toolEntries(path, desc, indexTools)
		tools = append(tools, t...)
		g, gnotes := checkEntries(path, desc, indexChecks)
		guardrails = append(guardrails, g...)
		notes = append(notes, gnotes...)
		env = mergeEnv(env, desc.Env)
		for _, n := range notes {
			fmt.Fprintln(stderr, "packd index:", n)
		}
	}
	sortByID(tools)
	sortByID(guardrails)
	top.Set("tools", tools)
	top.Set("guardrails", guardrails)
	// An index that named digests goes on naming them, those of the
	// modules as they are now.
	if _, had := top.Get("moduleDigests"); had || *digestsFlag {
		digests := &ojson.Object{}
		for _, path := range namedModules(top) {
			digests.Set(path, sums[path])
		}
		top.Set("moduleDigests", digests)
	}
	if env != nil {
		top.Set("env", envObject(env))
	}
	for _, k := range []string{"agents", "flows"} {
		if list, ok := top.Get(k); ok {
			if l, ok := list.([]any); ok {
				sortByID(l)
			}
		}
	}

	data := ojson.Canonical(top)
	if _, problems := host.ValidateIndex(data); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return fail(exitError, "the index written would have %d problem(s); nothing written", len(problems))
	}
	if out == "-" {
		_, _ = stdout.Write(data)
		return exitOK
	}
	if err := writeFileAtomic(out, data); err != nil {
		return fail(exitError, "%v", err)
	}
	fmt.Fprintf(stderr, "packd index: wrote %s: %d tool(s), %d check(s)\n", out, len(tools), len(guardrails))
	return exitOK
}

// defaultPublishedAt is $SOURCE_DATE_EPOCH (reproducible builds), else now.
func defaultPublishedAt(epoch string) string {
	at := time.Now()
	if n, err := strconv.ParseInt(epoch, 10, 64); err == nil {
		at = time.Unix(n, 0)
	}
	return at.UTC().Format("2006-01-02T15:04:05.000Z")
}

// namedModules are the module paths an index names, in order, once each.
func namedModules(top *ojson.Object) []string {
	var out []string
	for _, list := range []struct{ key, field string }{{"tools", "modulePath"}, {"guardrails", "checkModulePath"}} {
		v, _ := top.Get(list.key)
		arr, _ := v.([]any)
		for _, e := range arr {
			if o, ok := e.(*ojson.Object); ok {
				if p, ok := o.Get(list.field); ok {
					if s, ok := p.(string); ok && s != "" && !slices.Contains(out, s) {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// entries indexes an index's tools by id (each id's entries in index
// order) and its guardrails by check id (checkId, else id).
func entries(top *ojson.Object, key string) map[string][]*ojson.Object {
	out := map[string][]*ojson.Object{}
	v, _ := top.Get(key)
	arr, _ := v.([]any)
	for _, e := range arr {
		o, ok := e.(*ojson.Object)
		if !ok {
			continue
		}
		id := stringField(o, "id")
		if c, ok := o.Get("checkId"); ok && key == "guardrails" {
			id, _ = c.(string)
		}
		out[id] = append(out[id], o)
	}
	return out
}

func stringField(o *ojson.Object, key string) string {
	v, _ := o.Get(key)
	s, _ := v.(string)
	return s
}

// oldTools are the index's entries a module's tool updates: the entry of
// its id and version; when the module names no version, the entries of
// its id that name this module, else the one entry of its id.
func oldTools(old map[string][]*ojson.Object, path string, s abi.ToolSpec) []*ojson.Object {
	var same, here []*ojson.Object
	for _, o := range old[s.ID] {
		if s.Version != "" {
			if stringField(o, "version") == s.Version {
				return []*ojson.Object{o}
			}
			continue
		}
		same = append(same, o)
		if stringField(o, "modulePath") == path {
			here = append(here, o)
		}
	}
	if len(here) > 0 {
		return here
	}
	if len(same) == 1 {
		return same
	}
	return nil
}

// toolEntries are the index entries of the tools a module describes: what
// it says of each, over what the index said of the same tool.
func toolEntries(path string, d sandbox.Description, old map[string][]*ojson.Object) ([]any, []string) {
	var out []any
	var notes []string
	specs := map[string]abi.ToolSpec{}
	for _, s := range d.ToolSpecs {
		specs[s.ID] = s
	}
	for _, id := range d.Tools {
		if id == abi.Wildcard {
			notes = append(notes, fmt.Sprintf("%s serves any tool id (*): list those the pack has in the index by hand", path))
			continue
		}
		s := specs[id]
		s.ID = id
		bases := oldTools(old, path, s)
		if len(bases) == 0 {
			bases = []*ojson.Object{{}}
		}
		for _, base := range bases {
			e := ojson.Clone(base).(*ojson.Object)
			e.Set("id", id)
			setString(e, "version", s.Version)
			setString(e, "description", s.Description)
			notes = append(notes, setJSON(e, path, "tool "+id, []jsonField{{"input", s.Input}, {"output", s.Output}, {"limits", s.Limits}, {"network", s.Network},
				{"effects", s.Effects}, {"needs", s.Needs}, {"needsSpec", s.NeedsSpec}, {"spec", s.Spec}})...)
			setString(e, "sandbox", s.Sandbox)
			if s.Mutating != nil {
				e.Set("mutating", *s.Mutating)
			}
			for _, k := range []string{"input", "output"} {
				if _, ok := e.Get(k); !ok {
					e.Set(k, &ojson.Object{})
					notes = append(notes, fmt.Sprintf("%s: tool %s says no %s schema: {} (anything) written; give one (Go: guest.InputSchema/OutputSchema, or TypedTool)", path, id, k))
				}
			}
			e.Set("modulePath", path)
			out = append(out, e)
		}
	}
	return out, notes
}

// checkEntries are the guardrail entries of the checks a module describes.
func checkEntries(path string, d sandbox.Description, old map[string][]*ojson.Object) ([]any, []string) {
	specs := map[string]abi.CheckSpec{}
	var out []any
	var notes []string
	for _, s := range d.CheckSpecs {
		specs[s.ID] = s
		if !slices.Contains(d.Checks, s.ID) {
			notes = append(notes, fmt.Sprintf("%s: guardrail %s names check %s, which the module does not serve: no entry written (define the check in the pack, with defineCheck)", path, s.Guardrail, s.ID))
		}
	}
	for _, id := range d.Checks {
		s := specs[id]
		e := &ojson.Object{}
		if o := old[id]; len(o) > 0 {
			e = ojson.Clone(o[0]).(*ojson.Object)
		}
		setString(e, "id", s.Guardrail)
		if _, ok := e.Get("id"); !ok {
			e.Set("id", id)
		}
		if stringField(e, "id") != id {
			e.Set("checkId", id)
		}
		setString(e, "kind", s.Kind)
		setString(e, "severity", s.Severity)
		setString(e, "name", s.Name)
		setString(e, "sandbox", s.Sandbox)
		notes = append(notes, setJSON(e, path, "check "+id, []jsonField{{"action", s.Action}, {"configSchema", s.ConfigSchema}, {"limits", s.Limits}, {"network", s.Network},
			{"scope", s.Scope}, {"config", s.Config}})...)
		if _, ok := e.Get("kind"); !ok {
			e.Set("kind", "zero-llm")
		}
		if _, ok := e.Get("action"); !ok {
			e.Set("action", &ojson.Object{Keys: []string{"on-violation"}, Vals: []any{"halt"}})
		}
		e.Set("checkModulePath", path)
		out = append(out, e)
	}
	return out, notes
}

// setString sets key to v unless v is empty (the module said nothing).
func setString(e *ojson.Object, key, v string) {
	if v != "" {
		e.Set(key, v)
	}
}

type jsonField struct {
	key string
	raw []byte
}

// setJSON sets each field the module gave, and notes the ones that are
// not JSON.
func setJSON(e *ojson.Object, path, what string, fields []jsonField) []string {
	var notes []string
	for _, f := range fields {
		if len(f.raw) == 0 {
			continue
		}
		v, err := ojson.Decode(f.raw)
		if err != nil {
			notes = append(notes, fmt.Sprintf("%s: %s: its %s is not JSON: %v", path, what, f.key, err))
			continue
		}
		e.Set(f.key, v)
	}
	return notes
}

// mergeEnv adds a module's environment names to the pack's: a name one
// module requires is required.
func mergeEnv(pack, mod *abi.EnvSpec) *abi.EnvSpec {
	if mod == nil {
		return pack
	}
	if pack == nil {
		pack = &abi.EnvSpec{}
	}
	add := func(list *[]string, names []string) {
		for _, n := range names {
			if !slices.Contains(*list, n) {
				*list = append(*list, n)
			}
		}
	}
	add(&pack.Required, mod.Required)
	add(&pack.Optional, mod.Optional)
	return pack
}

// envObject is the index's env: sorted, a required name not optional too.
func envObject(env *abi.EnvSpec) *ojson.Object {
	req := slices.Sorted(slices.Values(env.Required))
	var opt []string
	for _, n := range env.Optional {
		if !slices.Contains(req, n) && !slices.Contains(opt, n) {
			opt = append(opt, n)
		}
	}
	slices.Sort(opt)
	list := func(names []string) []any {
		out := []any{}
		for _, n := range names {
			out = append(out, n)
		}
		return out
	}
	return &ojson.Object{Keys: []string{"required", "optional"}, Vals: []any{list(req), list(opt)}}
}

// sortByID sorts index entries by id, then version.
func sortByID(list []any) {
	field := func(v any, k string) string {
		o, _ := v.(*ojson.Object)
		if o == nil {
			return ""
		}
		s, _ := o.Get(k)
		str, _ := s.(string)
		return str
	}
	slices.SortStableFunc(list, func(a, b any) int {
		return cmp.Or(strings.Compare(field(a, "id"), field(b, "id")), strings.Compare(field(a, "version"), field(b, "version")))
	})
}

// writeFileAtomic writes data to path through a temporary file beside it,
// so that a reader never sees half an index (or half a module).
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
