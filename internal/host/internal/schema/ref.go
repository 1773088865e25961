package schema

import (
	"strconv"
	"strings"

	"github.com/kindgi/packd/internal/ojson"
)

// $ref and $dynamicRef: local references only (remote ones fail to compile).

// resolve finds a local $ref target: "#", "#/json/pointer" or "#anchor", and
// the schema path Ajv reports below it: the ref as written when Ajv inlines
// the target (it holds no ref of its own), else "#", since Ajv compiles such a
// target as a function of its own whose paths start afresh.
func (w *walker) resolve(ref any) (any, string, bool) {
	node, path, ok := w.find(ref)
	if ok && hasRef(node) {
		path = "#"
	}
	return node, path, ok
}

var refKeywords = map[string]bool{"$ref": true, "$recursiveRef": true, "$recursiveAnchor": true, "$dynamicRef": true, "$dynamicAnchor": true}

// hasRef mirrors Ajv's test for whether a referenced schema can be inlined.
func hasRef(node any) bool {
	switch n := node.(type) {
	case *ojson.Object:
		for i, k := range n.Keys {
			if refKeywords[k] || hasRef(n.Vals[i]) {
				return true
			}
		}
	case []any:
		for _, e := range n {
			if hasRef(e) {
				return true
			}
		}
	}
	return false
}

func (w *walker) find(ref any) (any, string, bool) {
	s, ok := ref.(string)
	if !ok {
		return nil, "", false
	}
	frag, found := strings.CutPrefix(s, "#")
	if !found {
		return nil, "", false
	}
	if frag == "" {
		return w.s.doc, "#", true
	}
	if !strings.HasPrefix(frag, "/") {
		a, ok := w.s.anchors[frag]
		return a.node, s, ok
	}
	node := w.s.doc
	for _, seg := range strings.Split(frag[1:], "/") {
		seg = percentDecode(seg)
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case *ojson.Object:
			v, ok := n.Get(seg)
			if !ok {
				return nil, "", false
			}
			node = v
		case []any:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(n) {
				return nil, "", false
			}
			node = n[i]
		default:
			return nil, "", false
		}
	}
	return node, s, true
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
