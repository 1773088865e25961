/* echo: a C pack that answers every tool call with the input it got
 * (the C counterpart of wasm-examples/echo). */
#define KINDGI_IMPLEMENTATION
#include "../../sdk/c/kindgi.h"

static int echo(kindgi_json input, kindgi_json ctx, kindgi_out *out) {
    (void)ctx;
    kindgi_write_json(out, input);
    return KINDGI_OK;
}

const kindgi_tool kindgi_tools[] = {
    {"echo.echo", echo, "1.0.0", "Answers with its input.", "{\"type\":\"object\"}", "{\"type\":\"object\"}"},
    {"echo.message", echo, "1.0.0", "Answers with its input, a message.",
     "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\",\"minLength\":1,\"description\":\"What to say back.\"}},"
     "\"required\":[\"message\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\"}},\"required\":[\"message\"]}"},
    {0},
};
const kindgi_check kindgi_checks[] = {{0}};
