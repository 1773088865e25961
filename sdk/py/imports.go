package pysdk

import "strings"

// What a pack's Python sources import, read from their text as Python's
// tokenizer splits it (strings, comments, brackets and backslashes that
// join lines), without running or compiling them.

// pyImport is one module an import statement names: `import a.b` names
// a.b; `from a import b, c` names a, with the names b and c (modules of
// the package a, or names in the module a).
type pyImport struct {
	Module string
	Names  []string
}

// importsOf is the source's absolute imports, anywhere in it (in
// functions and try blocks too). Relative imports (the pack's own) are
// not among them.
func importsOf(src string) []pyImport {
	var imports []pyImport
	for _, line := range logicalLines(src) {
		for _, stmt := range statements(line) {
			imports = append(imports, importStatement(stmt)...)
		}
	}
	return imports
}

// pyToken is a token of a logical line: a name (identifier or keyword),
// or one character of punctuation; strings, numbers and operators become
// "" (they never matter to an import).
type pyToken struct {
	text  string
	depth int // brackets open before it
}

// logicalLines splits src into its logical lines, as token lists.
func logicalLines(src string) [][]pyToken {
	var lines [][]pyToken
	var cur []pyToken
	depth := 0
	end := func() {
		if len(cur) > 0 {
			lines = append(lines, cur)
		}
		cur, depth = nil, 0
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(src) && (src[i+1] == '\n' || src[i+1] == '\r'):
			i += 2 // the line goes on
			if i < len(src) && src[i-1] == '\r' && src[i] == '\n' {
				i++
			}
		case c == '\n' || c == '\r':
			if depth <= 0 {
				end()
			}
			i++
		case c == '\'' || c == '"':
			i = skipString(src, i)
			cur = append(cur, pyToken{"", depth})
		case isNameByte(c):
			j := i
			for j < len(src) && (isNameByte(src[j]) || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && stringPrefix(src[i:j]) {
				i = skipString(src, j)
				cur = append(cur, pyToken{"", depth})
				continue
			}
			cur = append(cur, pyToken{src[i:j], depth})
			i = j
		case c >= '0' && c <= '9':
			for i < len(src) && (isNameByte(src[i]) || src[i] >= '0' && src[i] <= '9' || src[i] == '.') {
				i++
			}
			cur = append(cur, pyToken{"", depth})
		case c == ' ' || c == '\t' || c == '\f':
			i++
		default:
			switch c {
			case '(', '[', '{':
				cur = append(cur, pyToken{string(c), depth})
				depth++
			case ')', ']', '}':
				depth--
				cur = append(cur, pyToken{string(c), depth})
			case '.', ',', ':', ';', '*':
				cur = append(cur, pyToken{string(c), depth})
			default:
				cur = append(cur, pyToken{"", depth})
			}
			i++
		}
	}
	end()
	return lines
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// stringPrefix: r, b, u, f and the pairs Python allows before a quote.
func stringPrefix(p string) bool {
	switch strings.ToLower(p) {
	case "r", "b", "u", "f", "rb", "br", "fr", "rf":
		return true
	}
	return false
}

// skipString is the index after the string literal whose quote is at
// src[i] (its end, or the end of the line for one left open).
func skipString(src string, i int) int {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	if triple {
		i += 3
	} else {
		i++
	}
	for i < len(src) {
		switch c := src[i]; {
		case c == '\\':
			i += 2
		case triple && strings.HasPrefix(src[i:], strings.Repeat(string(q), 3)):
			return i + 3
		case !triple && c == q:
			return i + 1
		case !triple && c == '\n':
			return i
		default:
			i++
		}
	}
	return len(src)
}

// statements splits a logical line at the semicolons and colons outside
// brackets: `try: import x` holds the statement `import x`.
func statements(line []pyToken) [][]pyToken {
	var out [][]pyToken
	start := 0
	for i, t := range line {
		if t.depth == 0 && (t.text == ";" || t.text == ":") {
			out = append(out, line[start:i])
			start = i + 1
		}
	}
	return append(out, line[start:])
}

// importStatement is what one statement imports (none when it is not an
// import, or a relative one).
func importStatement(s []pyToken) []pyImport {
	if len(s) < 2 {
		return nil
	}
	switch s[0].text {
	case "import":
		var imports []pyImport
		for _, part := range splitTokens(s[1:], ",") {
			if name, _ := dotted(part); name != "" {
				imports = append(imports, pyImport{Module: name})
			}
		}
		return imports
	case "from":
		from, n := dotted(s[1:])
		if from == "" || 1+n >= len(s) || s[1+n].text != "import" {
			return nil // relative (from . import x), or not an import
		}
		imp := pyImport{Module: from}
		for _, part := range splitTokens(s[2+n:], ",") {
			if len(part) > 0 && part[0].text == "(" {
				part = part[1:]
			}
			if len(part) > 0 && isName(part[0].text) {
				imp.Names = append(imp.Names, part[0].text)
			}
		}
		return []pyImport{imp}
	}
	return nil
}

// dotted reads a dotted name at the start of s (name, then .name ...),
// and how many tokens it took; "" when s does not start with a name.
func dotted(s []pyToken) (string, int) {
	var b strings.Builder
	n := 0
	for n < len(s) {
		if n%2 == 0 {
			if !isName(s[n].text) {
				break
			}
			b.WriteString(s[n].text)
		} else {
			if s[n].text != "." {
				break
			}
			b.WriteByte('.')
		}
		n++
	}
	name := strings.TrimSuffix(b.String(), ".")
	if n%2 == 0 && n > 0 { // ended on a dot
		n--
	}
	return name, n
}

func isName(t string) bool { return t != "" && isNameByte(t[0]) }

func splitTokens(s []pyToken, sep string) [][]pyToken {
	var out [][]pyToken
	start := 0
	for i, t := range s {
		if t.text == sep {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
