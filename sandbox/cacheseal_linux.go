package sandbox

import (
	"io/fs"
	"os"
	"syscall"
)

// stampOf is what an entry looks like now: its size, its times and inode.
func stampOf(info fs.FileInfo) entryStamp {
	st := entryStamp{size: info.Size(), mod: info.ModTime()}
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.ctime, st.ctimeNanos, st.ino = sys.Ctim.Sec, sys.Ctim.Nsec, int64(sys.Ino)
	}
	return st
}

// openRegular opens the file at path for reading when it is a regular
// file, not a symbolic link (packd makes none in its cache): a FIFO put in
// an entry's place would block the read for ever, a device would read
// what it likes.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, nil
}
