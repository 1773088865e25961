package main

import (
	"fmt"
	"io"
	"strings"
)

// language is a language packd writes packs in: its --lang name, its name
// in words, the files of a new pack (templates of the pack's id), and
// what writes, builds and indexes them.
type language struct {
	flag, name string
	templates  map[string]string
	scaffold   func(dir, pack string, files map[string]string, stdout, stderr io.Writer) int
}

// languages are the languages of packd's packs, in the order packd names
// them: the one list packd init, its usage and the docs' test read.
var languages = []language{
	{"go", "Go", goPackFiles, initGo},
	{"c", "C", cPackFiles, initC},
	{"ts", "TypeScript", tsPackFiles, initTS},
	{"py", "Python", pyPackFiles, initPy},
}

func languageNamed(flag string) (language, bool) {
	for _, l := range languages {
		if l.flag == flag {
			return l, true
		}
	}
	return language{}, false
}

// languageNames formats each language with format (its flag, then its
// name) and joins them with sep.
func languageNames(format, sep string) string {
	parts := make([]string, len(languages))
	for i, l := range languages {
		parts[i] = fmt.Sprintf(format, l.flag, l.name)
	}
	return strings.Join(parts, sep)
}
