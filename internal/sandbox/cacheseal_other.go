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

// openFlags open a cache file for reading.
const openFlags = os.O_RDONLY
