//go:build wasip1

// Command gocanary is an isolation canary written in Go: it keeps what
// every call gave it in as many kinds of state as a Go pack can hold (a
// package variable, a map, a growing heap buffer, a buffered channel, the
// process environment, a file descriptor's offset... ) and answers with
// what it finds of earlier calls. Under packd every call must find
// nothing: {"last":null,"tenants":[],"heap":0,"queued":0,"env":""}.
package main

import (
	"encoding/json"
	"os"
	"sort"

	"github.com/kindgi/packd/abi/guest"
)

var (
	last    json.RawMessage     // the previous call's input
	tenants = map[string]bool{} // every tenant seen
	heap    []byte              // grows by each input
	queue   = make(chan string, 1024)
)

type found struct {
	Last    json.RawMessage `json:"last"`
	Tenants []string        `json:"tenants"`
	Heap    int             `json:"heap"`
	Queued  int             `json:"queued"`
	Env     string          `json:"env"`
}

func init() {
	guest.Tool("canary.keep", func(input json.RawMessage, ctx *guest.Context) (any, error) {
		f := found{Last: last, Tenants: []string{}, Heap: len(heap), Queued: len(queue), Env: os.Getenv("CANARY_LAST")}
		if f.Last == nil {
			f.Last = json.RawMessage("null")
		}
		for t := range tenants {
			f.Tenants = append(f.Tenants, t)
		}
		sort.Strings(f.Tenants)
		// Keep this call's input and tenant everywhere.
		last = append(json.RawMessage(nil), input...)
		tenants[ctx.TenantID] = true
		heap = append(heap, input...)
		select {
		case queue <- ctx.TenantID:
		default:
		}
		_ = os.Setenv("CANARY_LAST", string(input))
		return f, nil
	})
}

func main() {}
