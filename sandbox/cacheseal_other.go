//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

// stampOf is what an entry looks like now: its size and time.
func stampOf(info fs.FileInfo) entryStamp {
	return entryStamp{size: info.Size(), mod: info.ModTime()}
}

// openRegular opens the file at path for reading when it is a regular
// file.
func openRegular(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, nil
}
