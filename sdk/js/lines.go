package jssdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/internal/wasmbin"
)

// LineTable is the payload of a module's abi.SectionLines custom section
// for a bundle named file whose source map is sourceMap (version 3, as
// esbuild writes with --sourcemap): for each line of the bundle, the
// source file and line its first mapped position comes from. packd
// rewrites file:line in a call's stack and a load error to them, so an
// error names src/pack.ts:23, not pack.js:19937 (the runtime's stacks
// have lines, not columns). name turns a source map's source path into
// the name written (relative to the pack, say).
func LineTable(file string, sourceMap []byte, name func(string) string) ([]byte, error) {
	var sm struct {
		Version  int      `json:"version"`
		Sources  []string `json:"sources"`
		Mappings string   `json:"mappings"`
	}
	if err := json.Unmarshal(sourceMap, &sm); err != nil {
		return nil, fmt.Errorf("the source map: %w", err)
	}
	if sm.Version != 3 {
		return nil, fmt.Errorf("the source map is version %d, not 3", sm.Version)
	}
	t := abi.LineTable{File: file, Sources: make([]string, len(sm.Sources))}
	for i, s := range sm.Sources {
		t.Sources[i] = sourceName(name(s))
	}
	var src, line int64 // cumulative across the whole mappings
	for gen := range strings.SplitSeq(sm.Mappings, ";") {
		at := []int32{-1, 0}
		for seg := range strings.SplitSeq(gen, ",") {
			if seg == "" {
				continue
			}
			f, err := vlqs(seg)
			if err != nil {
				return nil, fmt.Errorf("the source map's mappings: %w", err)
			}
			if len(f) < 4 {
				continue
			}
			src += f[1]
			line += f[2]
			if src < 0 || src >= int64(len(sm.Sources)) || line < 0 || line >= 1<<31-1 {
				return nil, errors.New("the source map's mappings point outside its sources")
			}
			if at[0] < 0 {
				at = []int32{int32(src), int32(line + 1)}
			}
		}
		t.Lines = append(t.Lines, at...)
	}
	return json.Marshal(t)
}

// sourceName is a name as a table may hold it (abi.LineTable.Valid):
// printable, its tail when it is over abi.MaxSourceName bytes.
func sourceName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
	if s == "" {
		return "?"
	}
	if len(s) > abi.MaxSourceName {
		cut := len(s) - (abi.MaxSourceName - 3)
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		s = "..." + s[cut:]
	}
	return s
}

// vlqs decodes one segment of base64 VLQ fields.
func vlqs(seg string) ([]int64, error) {
	var out []int64
	var v int64
	shift := uint(0)
	for i := 0; i < len(seg); i++ {
		d := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", seg[i])
		if d < 0 || shift > 60 {
			return nil, fmt.Errorf("bad segment %q", seg)
		}
		v |= int64(d&31) << shift
		if d&32 != 0 {
			shift += 5
			continue
		}
		if v&1 != 0 {
			v = -(v >> 1)
		} else {
			v >>= 1
		}
		out = append(out, v)
		v, shift = 0, 0
	}
	if shift != 0 {
		return nil, fmt.Errorf("bad segment %q", seg)
	}
	return out, nil
}

// WithLines is module with table (LineTable's answer) in its
// abi.SectionLines custom section, at its end: nothing the runtime runs
// changes.
func WithLines(module, table []byte) []byte {
	payload := wasmbin.AppendName(nil, abi.SectionLines)
	payload = append(payload, table...)
	out := append(append([]byte{}, module...), 0)
	out = wasmbin.AppendU32(out, uint32(len(payload)))
	return append(out, payload...)
}
