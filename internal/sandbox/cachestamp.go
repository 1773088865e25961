package sandbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"os"
)

// A seal's stamp: what its entry looked like (size, modification and
// change times, inode) when it was last read whole and matched its seal,
// under the cache's key. A later boot that finds the entry looking the same
// trusts it without reading it again: every boot read and hashed every
// entry before (15 MiB a Go module, 14 ms, ahead of every compilation).
// Any write to a file, and any truncation, sets its change time to the
// clock's, and no system call sets it back; a file put in the entry's
// place has a change time of its own, and the key is the owner's alone.
// So an entry that still has its stamp has not been written since it was
// read, except within one tick of the clock that times files (a few ms)
// of its last write, as wazero's compilation writes it and packd seals it
// at once: the window the seal itself leaves. A file system that keeps no
// change time or inode (stampOf says none) gets no stamp.
//
// A stamped seal is the content's seal (32 bytes), the stamp (40), and an
// HMAC-SHA256 of both and the entry's name (32). A plain seal (32 bytes,
// from before stamps, or from an entry that changed while it was read) is
// checked by reading its entry, then stamped.

const stampLen = 40

func (s entryStamp) stampable() bool { return s.ino != 0 || s.ctime != 0 }

func (s entryStamp) bytes() []byte {
	var b [stampLen]byte
	for i, v := range []int64{s.size, s.mod.UnixNano(), s.ctime, s.ctimeNanos, s.ino} {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b[:]
}

func (c *cacheSeals) stampMAC(name string, content, stamp []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte("stamp\x00" + name + "\x00"))
	h.Write(content)
	h.Write(stamp)
	return h.Sum(nil)
}

// stamped reports whether seal has a stamp of its entry looking as now.
func (c *cacheSeals) stamped(name string, seal []byte, now entryStamp) bool {
	if len(seal) != sha256.Size+stampLen+sha256.Size || !now.stampable() {
		return false
	}
	st := now.bytes()
	return bytes.Equal(seal[sha256.Size:sha256.Size+stampLen], st) &&
		hmac.Equal(seal[sha256.Size+stampLen:], c.stampMAC(name, seal[:sha256.Size], st))
}

// contentSeal is the part of seal that covers its entry's bytes, nil when
// seal is not a seal.
func contentSeal(seal []byte) []byte {
	if len(seal) != sha256.Size && len(seal) != sha256.Size+stampLen+sha256.Size {
		return nil
	}
	return seal[:sha256.Size]
}

// contentMatches reports whether mac, an entry's bytes read whole (nil
// when they could not be), is what seal says of them.
func contentMatches(mac, seal []byte) bool {
	content := contentSeal(seal)
	return mac != nil && content != nil && hmac.Equal(mac, content)
}

// sealFor is the seal to write for the entry at path, whose bytes have the
// content seal mac and looked as before when they were read: stamped when
// it still looks so, plain when it changed meanwhile (or has no stamp).
func (c *cacheSeals) sealFor(path, name string, mac []byte, before entryStamp) []byte {
	info, err := os.Stat(path)
	if err != nil || stampOf(info) != before || !before.stampable() {
		return mac
	}
	st := before.bytes()
	return append(append(append([]byte(nil), mac...), st...), c.stampMAC(name, mac, st)...)
}
