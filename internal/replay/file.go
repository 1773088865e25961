package replay

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteFile writes one record into a file of its own in dir, as a
// service's record directory does, and returns its path.
func WriteFile(dir string, rec *Record) (string, error) {
	b, err := rec.Encode()
	if err != nil {
		return "", fmt.Errorf("encoding the call record: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("writing the call record: %w", err)
	}
	return writeEncoded(dir, rec, b)
}

// writeEncoded writes a record's bytes (Encode's) under a name of its time and
// target (and a random suffix): a temporary name, then renamed, so that a
// reader never sees half of one.
func writeEncoded(dir string, rec *Record, b []byte) (string, error) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := fmt.Sprintf("%s-%s-%s.json", rec.RecordedAt.UTC().Format("20060102T150405.000000000Z"), fileSafe(rec.ID), hex.EncodeToString(suffix[:]))
	tmp := filepath.Join(dir, "."+name+".tmp")
	err := os.WriteFile(tmp, b, 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// fileSafe is a target id as part of a file name: letters, digits, '.',
// '-' and '_', at most 64 of them.
func fileSafe(id string) string {
	id = strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return r
		}
		return '_'
	}, id)
	return id[:min(len(id), 64)]
}
