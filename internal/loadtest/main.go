// Command loadtest serves the echo example pack like `packd serve`, plus a
// route /bench/plain in the same echo server that answers a tool call
// without WASM (token, content type, body, parse, encode): the baseline the
// WASM path is compared with. `make loadtest` drives both with wrk.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/kindgi/packd/abi"
	"github.com/kindgi/packd/host"
	"github.com/kindgi/packd/internal/ojson"
	"github.com/kindgi/packd/sandbox"
	"github.com/kindgi/packd/server"
)

func main() {
	index := flag.String("index", "wasm-examples/echo/index.json", "the pack index")
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	token := flag.String("token", "bench", "pack token")
	flag.Parse()
	ctx := context.Background()
	pack, err := host.Load(ctx, host.Config{IndexPath: *index, Sandbox: sandbox.Config{CacheDir: os.TempDir() + "/packd-test-wazero-cache"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv, err := server.New(server.Config{Pack: pack, Token: *token, MaxConcurrency: 256})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv.Echo().POST("/bench/plain", func(c echo.Context) error {
		if c.Request().Header.Get("kindgi-pack-token") != *token {
			return c.JSONBlob(http.StatusUnauthorized, []byte(`{"error":"Bad pack token"}`))
		}
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, server.DefaultMaxBodyBytes+1))
		if err != nil {
			return err
		}
		msg, err := ojson.Decode(body)
		if err != nil {
			return c.JSONBlob(http.StatusOK, (&abi.Error{Code: abi.CodeMalformedMessage, Message: "Request body is not valid JSON"}).Encode())
		}
		input, _ := msg.(*ojson.Object).Get("input")
		return c.JSONBlob(http.StatusOK, abi.EncodeResult(input))
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "listening on", ln.Addr())
	_ = srv.Serve(ln)
}
