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
	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/sandbox"
)

// indexCmd writes a pack's index.json from its modules: each module
// describes its tools and checks (ids, versions, descriptions, schemas);
// what the index already says and the modules do not (packId, agents,
// flows, env, a tool's limits or effects) is kept. The index is written
// canonically, so the same modules and index give the same bytes.
func indexCmd(args []string, stdout, stderr io.Writer) int {
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
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: packd index --index index.json [flags] [module.wasm ...]")
		fmt.Fprintln(stderr, "Writes the index from what each module describes; with no modules, those the index names.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "packd index: "+format+"\n", a...)
		return code
	}
	if lf.index == "" {
		lf.index = "index.json"
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
	oldTools, oldChecks := entries(top, "tools"), entries(top, "guardrails")
	var tools, guardrails []any
	for _, path := range modules {
		wasm, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			return fail(exitError, "%v", err)
		}
		mod, err := sb.Compile(ctx, wasm)
		if err != nil {
			return fail(exitError, "%s: %v", path, err)
		}
		desc, err := mod.Describe(ctx)
		_ = mod.Close(ctx)
		if err != nil {
			return fail(exitError, "%s: describing module: %v", path, err)
		}
		t, notes := toolEntries(path, desc, oldTools)
		tools = append(tools, t...)
		guardrails = append(guardrails, checkEntries(path, desc, oldChecks)...)
		for _, n := range notes {
			fmt.Fprintln(stderr, "packd index:", n)
		}
	}
	sortByID(tools)
	sortByID(guardrails)
	top.Set("tools", tools)
	top.Set("guardrails", guardrails)
	for _, k := range []string{"agents", "flows"} {
		if list, ok := top.Get(k); ok {
			if l, ok := list.([]any); ok {
				sortByID(l)
			}
		}
	}

	data := ojson.Canonical(top)
	if _, problems := host.CheckIndex(data); len(problems) > 0 {
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

// entries indexes an index's tools or guardrails by id@version (a
// guardrail by its check id).
func entries(top *ojson.Object, key string) map[string]*ojson.Object {
	out := map[string]*ojson.Object{}
	v, _ := top.Get(key)
	arr, _ := v.([]any)
	for _, e := range arr {
		o, ok := e.(*ojson.Object)
		if !ok {
			continue
		}
		id, _ := o.Get("id")
		if key == "guardrails" {
			if c, ok := o.Get("checkId"); ok {
				id = c
			}
			out[fmt.Sprint(id)] = o
			continue
		}
		ver, _ := o.Get("version")
		out[fmt.Sprint(id)+"@"+fmt.Sprint(ver)] = o
	}
	return out
}

// toolEntries are the index entries of the tools a module describes: what
// it says of each, over what the index said of the same id and version.
func toolEntries(path string, d sandbox.Description, old map[string]*ojson.Object) ([]any, []string) {
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
		key := id + "@" + s.Version
		if s.Version == "" {
			key = id + "@<nil>"
		}
		e := &ojson.Object{}
		if o := old[key]; o != nil {
			e = ojson.Clone(o).(*ojson.Object)
		}
		e.Set("id", id)
		if s.Version != "" {
			e.Set("version", s.Version)
		}
		if s.Description != "" {
			e.Set("description", s.Description)
		}
		for _, f := range []struct {
			key string
			raw []byte
		}{{"input", s.Input}, {"output", s.Output}} {
			if len(f.raw) > 0 {
				v, err := ojson.Decode(f.raw)
				if err != nil {
					notes = append(notes, fmt.Sprintf("%s: tool %s: its %s schema is not JSON: %v", path, id, f.key, err))
					continue
				}
				e.Set(f.key, v)
			}
			if _, ok := e.Get(f.key); !ok {
				e.Set(f.key, &ojson.Object{})
				notes = append(notes, fmt.Sprintf("%s: tool %s says no %s schema: {} (anything) written; give one (Go: guest.InputSchema/OutputSchema, or TypedTool)", path, id, f.key))
			}
		}
		e.Set("modulePath", path)
		out = append(out, e)
	}
	return out, notes
}

// checkEntries are the guardrail entries of the checks a module describes.
func checkEntries(path string, d sandbox.Description, old map[string]*ojson.Object) []any {
	specs := map[string]abi.CheckSpec{}
	for _, s := range d.CheckSpecs {
		specs[s.ID] = s
	}
	var out []any
	for _, id := range d.Checks {
		s := specs[id]
		e := &ojson.Object{}
		if o := old[id]; o != nil {
			e = ojson.Clone(o).(*ojson.Object)
		}
		if _, ok := e.Get("id"); !ok {
			e.Set("id", id)
		}
		if got, _ := e.Get("id"); got != id {
			e.Set("checkId", id)
		}
		if s.Kind != "" {
			e.Set("kind", s.Kind)
		} else if _, ok := e.Get("kind"); !ok {
			e.Set("kind", "zero-llm")
		}
		if a, err := ojson.Decode(s.Action); err == nil {
			e.Set("action", a)
		} else if _, ok := e.Get("action"); !ok {
			e.Set("action", &ojson.Object{Keys: []string{"on-violation"}, Vals: []any{"halt"}})
		}
		if c, err := ojson.Decode(s.ConfigSchema); err == nil {
			e.Set("configSchema", c)
		}
		e.Set("checkModulePath", path)
		out = append(out, e)
	}
	return out
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
// so that a reader never sees half an index.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".index-*.json")
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
