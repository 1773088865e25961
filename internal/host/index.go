package host

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/kindgi/packd/internal/host/internal/egress"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/internal/replay"
)

// Index is a parsed pack index (envelope v1).
type Index struct {
	PackID, PackVersion, ArtifactVersion, PublishedAt string
	Tools                                             []*ToolSpec
	Guardrails                                        []*GuardrailSpec
	EnvRequired, EnvOptional                          []string
	// ModuleDigests are the index's moduleDigests: each module path's
	// "sha256:" and hex SHA-256, which its bytes must have to load (nil:
	// the index names none). A signature over the index covers the code
	// through them.
	ModuleDigests map[string]string
	// Hash is "sha256:" and the hex SHA-256 of the index file's bytes.
	Hash string
}

// ToolSpec is one entry of the index's tools.
type ToolSpec struct {
	ID, Version, Description, ModulePath string
	Input, Output                        any // JSON Schemas as written (ojson)
	// Limits bound the tool's calls (its limits and network).
	Limits Limits
	// Internal is visibility "internal": the tool is the operator's, not
	// a model's. /v1/invoke calls it; the MCP face neither lists it nor
	// calls it.
	Internal bool
	// Mutating is the index's mutating (nil: the index does not say).
	Mutating *bool
	// EffectKinds are the kinds of the index's effects, in index order
	// ("" for an effect without a string kind).
	EffectKinds []string
}

// ReachesNetwork says whether the index lets the tool's code make
// outbound requests (its network is an allowlist or unrestricted).
func (t *ToolSpec) ReachesNetwork() bool {
	k := t.Limits.Network.Kind
	return k != "" && k != egress.KindNone
}

// GuardrailSpec is one entry of the index's guardrails.
type GuardrailSpec struct {
	ID, CheckID, Kind, ModulePath string
	// Action is what the runtime does on a violation, an open object such
	// as {"on-violation": "halt"}; packd keeps it and does not read it.
	Action       json.RawMessage
	ConfigSchema any // nil when absent
	// Limits bound the check's calls (its limits and network).
	Limits Limits
}

// InvokeID is the id a check-invoke names to call this check: checkId,
// else id.
func (g *GuardrailSpec) InvokeID() string {
	if g.CheckID != "" {
		return g.CheckID
	}
	return g.ID
}

var (
	indexKeys = keySet("v", "packId", "packVersion", "artifactVersion", "publishedAt",
		"tools", "guardrails", "agents", "flows", "env", "moduleDigests")
	indexRequired = []string{"v", "packId", "packVersion", "artifactVersion", "publishedAt",
		"tools", "guardrails", "agents", "flows"}
	toolKeys = keySet("id", "input", "output", "modulePath", "description", "version",
		"effects", "needs", "needsSpec", "sandbox", "limits", "network", "mutating", "spec", "visibility")
	guardrailKeys = keySet("id", "kind", "action", "checkModulePath", "checkId",
		"configSchema", "config", "name", "severity", "scope", "sandbox", "limits", "network")
	envName       = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	agentRequired = []string{"id", "version", "name", "instructions", "capabilities", "tools", "modulePath"}
	flowRequired  = []string{"id", "version", "nodes", "edges", "kernelPayloadVersion", "modulePath"}
)

func keySet(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// ValidateIndex reads an index's bytes and lists every problem with them, as
// Load does before it loads any module (packd index checks what it writes
// with it).
func ValidateIndex(data []byte) (*Index, []string) { return parseIndex(data) }

// ModulePaths are the module paths the index names, once each, tools'
// first, in index order.
func (idx *Index) ModulePaths() []string {
	var paths []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	for _, t := range idx.Tools {
		add(t.ModulePath)
	}
	for _, g := range idx.Guardrails {
		add(g.ModulePath)
	}
	return paths
}

// parseIndex reads an index. It collects every problem it finds rather than
// stopping at the first; the index is usable only when problems is empty.
func parseIndex(data []byte) (idx *Index, problems []string) {
	idx = &Index{Hash: replay.ContentHash(data)}
	doc, err := ojson.Decode(data)
	if err != nil {
		return idx, []string{"Cannot read the pack index: it is not valid JSON: " + notJSON(err)}
	}
	problems = readIndex(doc, idx)
	if len(problems) == 0 {
		// The schema says the same as readIndex (a test holds them to it):
		// it speaks only if readIndex missed something.
		problems = schemaProblems(doc)
	}
	return idx, problems
}

// readIndex fills idx from a decoded index and lists its problems.
func readIndex(doc any, idx *Index) []string {
	top, ok := doc.(*ojson.Object)
	if !ok {
		return []string{"Cannot read the pack index: the index is not a JSON object"}
	}
	p := &problemList{}
	if v, _ := top.Get("v"); v != float64(1) {
		return []string{fmt.Sprintf("Index envelope v%s is not v1", envelopeText(v))}
	}
	p.keys(top, "Index", indexKeys, indexRequired...)
	idx.PackID = p.str(top, "packId", "Index", true)
	idx.PackVersion = p.str(top, "packVersion", "Index", true)
	idx.ArtifactVersion = p.str(top, "artifactVersion", "Index", true)
	idx.PublishedAt = p.str(top, "publishedAt", "Index", true)
	// Agents and flows are data only: checked for their shape, then ignored.
	for i, a := range p.array(top, "agents") {
		p.entry(fmt.Sprintf("agents[%d]", i), a, agentRequired)
	}
	for i, f := range p.array(top, "flows") {
		if o := p.entry(fmt.Sprintf("flows[%d]", i), f, flowRequired); o != nil {
			if v, ok := o.Get("kernelPayloadVersion"); ok && v != float64(1) {
				p.add("flows[%d] \"kernelPayloadVersion\" must be 1", i)
			}
		}
	}
	if env, ok := top.Get("env"); ok {
		idx.EnvRequired, idx.EnvOptional = p.env(env)
	}
	for i, t := range p.array(top, "tools") {
		if spec := p.tool(i, t); spec != nil {
			idx.Tools = append(idx.Tools, spec)
		}
	}
	for i, g := range p.array(top, "guardrails") {
		if spec := p.guardrail(i, g); spec != nil {
			idx.Guardrails = append(idx.Guardrails, spec)
		}
	}
	if d, ok := top.Get("moduleDigests"); ok {
		idx.ModuleDigests = p.digests(d, idx.ModulePaths())
	}
	seenTools := map[string]bool{}
	for _, t := range idx.Tools {
		key := t.ID + "@" + t.Version
		if seenTools[key] {
			if t.Version == "" {
				p.add("Duplicate tool %s (no version)", t.ID)
			} else {
				p.add("Duplicate tool %s version %s", t.ID, t.Version)
			}
		}
		seenTools[key] = true
	}
	seenChecks := map[string]bool{}
	for _, g := range idx.Guardrails {
		if seenChecks[g.InvokeID()] {
			p.add("Duplicate check %s", g.InvokeID())
		}
		seenChecks[g.InvokeID()] = true
	}
	return p.list
}

func envelopeText(v any) string {
	if v == nil {
		return "undefined"
	}
	return string(ojson.Encode(v))
}

type problemList struct{ list []string }

// keys reports the keys of a closed object that are not allowed, and the
// required ones that are missing.
func (p *problemList) keys(o *ojson.Object, where string, allowed map[string]bool, required ...string) {
	for _, k := range o.Keys {
		if !allowed[k] {
			p.add("%s has an unknown key %q", where, k)
		}
	}
	for _, k := range required {
		if _, ok := o.Get(k); !ok {
			p.add("%s is missing %q", where, k)
		}
	}
}

func (p *problemList) add(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// str reads a string field; required fields must be non-empty.
func (p *problemList) str(o *ojson.Object, key, where string, required bool) string {
	v, ok := o.Get(key)
	if !ok {
		return ""
	}
	s, isStr := v.(string)
	if !isStr || (required && s == "") {
		p.add("%s %q must be a non-empty string", where, key)
		return ""
	}
	return s
}

func (p *problemList) array(o *ojson.Object, key string) []any {
	v, ok := o.Get(key)
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	if !isArr {
		p.add("Index %q must be an array", key)
	}
	return arr
}

func (p *problemList) env(v any) (required, optional []string) {
	o, ok := v.(*ojson.Object)
	if !ok {
		p.add(`Index "env" must be an object`)
		return nil, nil
	}
	names := func(key string) []string {
		raw, ok := o.Get(key)
		if !ok {
			return nil
		}
		arr, ok := raw.([]any)
		if !ok {
			p.add("Index env.%s must be an array of names", key)
			return nil
		}
		var out []string
		for _, n := range arr {
			s, _ := n.(string)
			if !envName.MatchString(s) || strings.HasPrefix(s, "KINDGI_") {
				p.add("Index env.%s: %s is not an allowed variable name", key, ojson.Encode(n))
				continue
			}
			out = append(out, s)
		}
		return out
	}
	for _, k := range o.Keys {
		if k != "required" && k != "optional" {
			p.add("Index env has an unknown key %q", k)
		}
	}
	return names("required"), names("optional")
}

func (p *problemList) tool(i int, v any) *ToolSpec {
	where := fmt.Sprintf("tools[%d]", i)
	o, ok := v.(*ojson.Object)
	if !ok {
		p.add("%s must be an object", where)
		return nil
	}
	if id, ok := o.Get("id"); ok {
		if s, isStr := id.(string); isStr && s != "" {
			where = fmt.Sprintf("tools[%d] (%s)", i, s)
		}
	}
	n := len(p.list)
	p.keys(o, where, toolKeys, "id", "input", "output", "modulePath")
	t := &ToolSpec{
		ID:          p.str(o, "id", where, true),
		Version:     p.str(o, "version", where, true),
		Description: p.str(o, "description", where, false),
		ModulePath:  p.str(o, "modulePath", where, true),
	}
	t.Input = p.schema(o, "input", where)
	t.Output = p.schema(o, "output", where)
	for _, k := range []string{"effects", "needs"} {
		p.objects(o, k, where)
	}
	if effects, ok := o.Get("effects"); ok {
		list, _ := effects.([]any)
		for _, e := range list {
			kind := ""
			if eo, ok := e.(*ojson.Object); ok {
				kind, _ = stringField(eo, "kind")
			}
			t.EffectKinds = append(t.EffectKinds, kind)
		}
	}
	switch v, ok := o.Get("visibility"); {
	case !ok, v == "public":
	case v == "internal":
		t.Internal = true
	default:
		p.add(`%s "visibility" must be "public" or "internal"`, where)
	}
	for _, k := range []string{"needsSpec", "spec"} {
		p.object(o, k, where)
	}
	t.Limits = p.readLimits(o, where)
	p.str(o, "sandbox", where, false)
	p.boolean(o, "mutating", where)
	if v, _ := o.Get("mutating"); v != nil {
		if m, ok := v.(bool); ok {
			t.Mutating = &m
		}
	}
	if m, _ := o.Get("mutating"); m == false {
		t.Limits.Network.ReadOnly = true
	}
	if len(p.list) > n {
		return nil
	}
	return t
}

func (p *problemList) guardrail(i int, v any) *GuardrailSpec {
	where := fmt.Sprintf("guardrails[%d]", i)
	o, ok := v.(*ojson.Object)
	if !ok {
		p.add("%s must be an object", where)
		return nil
	}
	n := len(p.list)
	p.keys(o, where, guardrailKeys, "id", "kind", "action", "checkModulePath")
	g := &GuardrailSpec{
		ID:         p.str(o, "id", where, true),
		CheckID:    p.str(o, "checkId", where, true),
		Kind:       p.str(o, "kind", where, true),
		Action:     raw(p.object(o, "action", where)),
		ModulePath: p.str(o, "checkModulePath", where, true),
	}
	for _, k := range []string{"name", "severity", "sandbox"} {
		p.str(o, k, where, false)
	}
	for _, k := range []string{"scope", "config"} {
		p.object(o, k, where)
	}
	g.Limits = p.readLimits(o, where)
	if cs, ok := o.Get("configSchema"); ok {
		if _, isObj := cs.(*ojson.Object); !isObj {
			p.add("%s \"configSchema\" must be a JSON Schema object", where)
		}
		g.ConfigSchema = cs
	}
	if len(p.list) > n {
		return nil
	}
	return g
}

// entry checks an agents or flows entry: an object with its required keys
// (open otherwise: packd does not read them).
func (p *problemList) entry(where string, v any, required []string) *ojson.Object {
	o, ok := v.(*ojson.Object)
	if !ok {
		p.add("%s must be an object", where)
		return nil
	}
	for _, k := range required {
		if _, ok := o.Get(k); !ok {
			p.add("%s is missing %q", where, k)
		}
	}
	return o
}

// raw is an object as written (nil for none).
func raw(o *ojson.Object) json.RawMessage {
	if o == nil {
		return nil
	}
	return ojson.Encode(o)
}

// object reads an open object field; nil when absent.
func (p *problemList) object(o *ojson.Object, key, where string) *ojson.Object {
	v, ok := o.Get(key)
	if !ok {
		return nil
	}
	obj, isObj := v.(*ojson.Object)
	if !isObj {
		p.add("%s %q must be an object (found %s)", where, key, jsonType(v))
	}
	return obj
}

// objects checks an array-of-objects field.
func (p *problemList) objects(o *ojson.Object, key, where string) {
	v, ok := o.Get(key)
	if !ok {
		return
	}
	arr, isArr := v.([]any)
	if !isArr {
		p.add("%s %q must be an array of objects (found %s)", where, key, jsonType(v))
		return
	}
	for i, e := range arr {
		if _, isObj := e.(*ojson.Object); !isObj {
			p.add("%s %s[%d] must be an object (found %s)", where, key, i, jsonType(e))
		}
	}
}

func (p *problemList) boolean(o *ojson.Object, key, where string) {
	if v, ok := o.Get(key); ok {
		if _, isBool := v.(bool); !isBool {
			p.add("%s %q must be true or false (found %s)", where, key, jsonType(v))
		}
	}
}

// schema reads a JSON Schema field: an object or a boolean.
func (p *problemList) schema(o *ojson.Object, key, where string) any {
	v, ok := o.Get(key)
	if !ok {
		return nil
	}
	switch v.(type) {
	case *ojson.Object, bool:
	default:
		p.add("%s %q must be a JSON Schema (an object or a boolean; found %s)", where, key, jsonType(v))
	}
	return v
}

// jsonType names the JSON type of a decoded value.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}
