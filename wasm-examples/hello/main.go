// Command hello is the pack `packd init` scaffolds: one typed tool, whose
// index entry (schemas from its types) `packd index` writes.
package main

import "github.com/kindgi/packd/abi/guest"

type greetIn struct {
	Name string `json:"name" desc:"Who to greet."`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func init() {
	guest.TypedTool("hello.greet", func(in greetIn, ctx *guest.Context) (greetOut, error) {
		return greetOut{Greeting: "Hello, " + in.Name + "!"}, nil
	}, guest.Version("1.0.0"), guest.Description("Greets someone."))
}

func main() {}
