//go:build !linux

package sandbox

import "github.com/tetratelabs/wazero/experimental"

// mmapAvailable: elsewhere instance memory is on the Go heap
// (heapMemory).
const mmapAvailable = false

func (c *callMemory) Allocate(_, max uint64) experimental.LinearMemory {
	return heapAllocator{c}.Allocate(0, max)
}

type mappings struct{}

func newMappings() *mappings { return &mappings{} }
func (p *mappings) close()   {}

type memImage struct{ data []byte } // never made: newMemImage answers nil

type mmapMemory struct {
	buf   []byte
	image *memImage
}

func newMemImage([]byte) *memImage               { return nil }
func (img *memImage) close()                     {}
func revert([]byte, *memImage) error             { return nil }
func (m *mmapMemory) adopt(*memImage) bool       { return false }
func resetWritten(*mmapMemory) (int, PoolReason) { return 0, "" }
func (m *mmapMemory) shrink(uint64) bool         { return false }
