"""The echo pack in Python: the tools of wasm-examples/echo (Go), c-echo (C)
and ts-echo (TypeScript), answering with their input."""

from packd_sdk import define_tool

define_tool(
    id="echo.echo",
    version="1.0.0",
    description="Answers with its input.",
    input={"type": "object"},
    output={"type": "object"},
    handler=lambda input: input,
)


def message(input, ctx):
    return {"message": input["message"]}


define_tool(
    id="echo.message",
    version="1.0.0",
    description="Answers with its input, a message.",
    input={
        "type": "object",
        "properties": {"message": {"type": "string", "minLength": 1, "description": "What to say back."}},
        "required": ["message"],
        "additionalProperties": False,
    },
    output={"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    handler=message,
)
