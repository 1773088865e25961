//go:build !linux

package sandbox

import "github.com/tetratelabs/wazero/experimental"

// mmapAvailable: elsewhere instance memory is wazero's own (Go heap), and
// the budget counts only each call's initial reservation.
const mmapAvailable = false

func (c *callMemory) Allocate(_, _ uint64) experimental.LinearMemory { return nil }

type mappings struct{}

func newMappings() *mappings { return &mappings{} }
func (p *mappings) close()   {}

type memImage struct{}

type mmapMemory struct {
	buf   []byte
	image *memImage
}

func newMemImage([]byte) *memImage                 { return nil }
func (img *memImage) close()                       {}
func revert([]byte, *memImage) error               { return nil }
func resetWritten([]byte, *memImage) (int, string) { return 0, "" }
