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

// openFlags open a cache file for reading: a FIFO does not block the
// open, and a symbolic link is refused (packd makes none in its cache).
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW
