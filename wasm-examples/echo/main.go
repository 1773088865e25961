// Command echo is a pack that answers every tool id with the input it got.
package main

import (
	"encoding/json"

	"github.com/kindgi/packd/abi/guest"
)

func init() {
	// A raw handler: its output goes out without being boxed in an any
	// (guest.RawToolFunc), and as the input it is, it is not looked at.
	guest.AnyRawTool(func(_ string, input json.RawMessage, _ *guest.Context) (json.RawMessage, error) {
		return input, nil
	})
}

func main() {}
