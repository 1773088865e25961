package pysdk

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
)

// TestImportsOf: the imports build-py reads from a pack's source are
// Python's: every absolute import statement, wherever it stands, and
// nothing that only looks like one (in a string or a comment).
func TestImportsOf(t *testing.T) {
	src := `"""A docstring that says
import notthis
from notthat import x
"""
import json, xml.etree.ElementTree as ET  # import notacomment
from email.mime import (
    text,   # a comment inside
    multipart as mp,
)
from . import sibling
from .pkg import other
from __future__ import annotations
s = 'import notastring'; import ipaddress
r = r"\" import notraw"
b = b'''import notbytes'''
x = f"{1}" + \
    "import notcontinued"

def f():
    try: import tomllib
    except ImportError: pass
    from http import server, client
    from zoneinfo import *

class C: import shlex
if True:
    import \
        queue
value = {'k': 'import notadict'}
`
	var got []string
	for _, imp := range importsOf(src) {
		got = append(got, fmt.Sprintf("%s %v", imp.Module, imp.Names))
	}
	want := []string{"json []", "xml.etree.ElementTree []", "email.mime [text multipart]", "__future__ [annotations]",
		"ipaddress []", "tomllib []", "http [server client]", "zoneinfo []", "shlex []", "queue []"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("imports:\n got %q\nwant %q", got, want)
	}
}

// TestNeedsOf: a pack's module carries the standard library modules its
// sources import, what those import, and their packages, and no others;
// the pack's own modules shadow the library's; what packd's Python leaves
// out or does not have is said.
func TestNeedsOf(t *testing.T) {
	needs, err := NeedsOf([]Source{
		{Module: "tools", File: "tools.py", Text: []byte("import json, os.path\nimport xml.etree.ElementTree as ET\nfrom email.mime import text\nfrom http import server\nimport requests\nimport sqlite3\nimport queue\nfrom tools_helpers import x\n")},
		{Module: "queue", File: "queue.py", Text: []byte("# the pack's own queue\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"xml.etree.ElementTree", "xml.etree", "email.mime.text", "email.mime", "email", "email.charset"} {
		if !slices.Contains(needs.Library, m) {
			t.Errorf("the module does not carry %s: %q", m, needs.Library)
		}
	}
	for _, m := range []string{"json", "queue", "http.server", "sqlite3", "tomllib", "zoneinfo", "ipaddress", "os.path", "requests"} {
		if slices.Contains(needs.Library, m) {
			t.Errorf("the module carries %s, which the runtime has, the pack holds, packd leaves out or the pack does not import: %q", m, needs.Library)
		}
	}
	if want := []string{"http.server", "sqlite3"}; !reflect.DeepEqual(needs.LeftOut, want) {
		t.Errorf("left out: %q, want %q", needs.LeftOut, want)
	}
	if want := []string{"requests", "tools_helpers"}; !reflect.DeepEqual(needs.Unknown, want) {
		t.Errorf("unknown: %q, want %q", needs.Unknown, want)
	}

	// Nothing imported from the library: nothing carried.
	if needs, err := NeedsOf([]Source{{Module: "t", File: "t.py", Text: []byte("import json, re, dataclasses\n")}}); err != nil || len(needs.Library)+len(needs.LeftOut)+len(needs.Unknown) > 0 {
		t.Errorf("needs of what the runtime has: %+v %v", needs, err)
	}
}
