package main

import (
	"testing"

	"github.com/kindgi/packd/abi/guest"
)

// The tool runs natively, with a request built for it.
func TestGreet(t *testing.T) {
	out, err := guest.Invoke("hello.greet", map[string]any{"name": "Ada"}, nil)
	if err != nil || string(out) != `{"greeting":"Hello, Ada!"}` {
		t.Fatalf("%s %v", out, err)
	}
}
