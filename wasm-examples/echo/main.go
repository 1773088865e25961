// Command echo is a pack that answers every tool id with the input it got.
package main

import (
	"encoding/json"

	"github.com/kindgi/packd/abi/guest"
)

func init() {
	guest.AnyTool(func(_ string, input json.RawMessage, _ *guest.Context) (any, error) {
		return input, nil
	})
}

func main() {}
