"""The conformance fixture pack of the existing pack services (PROTOCOL-NOTES
§8) in Python, with the same tools and checks as the Go fixture
(wasm-examples/conformance), the C one and the TypeScript one: `hold`
sleeps instead of polling for a file, since a guest has no filesystem. Its
index is the TypeScript fixture's (the index, not the module, decides what
packd validates)."""

import os
import time

from packd_sdk import declare_env, define_check, define_tool

declare_env(optional=["CONFORMANCE_VISIBLE"])


class Error(Exception):
    """Named as the other fixtures' throws are (a traceback's last line
    says "Error: boom", not "conformance.Error: boom")."""


Error.__module__ = "builtins"


define_tool(id="conformance.echo", version="1.0.0", description="Answers with its message.",
            handler=lambda input: {"message": input["message"]})

# Off its schema on purpose: packd answers output-validation-failed.
define_tool(id="conformance.bad-output", version="1.0.0", handler=lambda input: {"message": 42})


def context(input, ctx):
    out = {"tenantId": ctx["tenantId"], "runId": ctx["runId"]}
    for k in ("env", "secrets", "config"):
        out[k] = ctx.get(k) if ctx.get(k) is not None else {}
    for k in ("requestId", "idempotencyKey", "projectId", "orgId", "settings"):
        if k in ctx:
            out[k] = ctx[k]
    return out


define_tool(id="conformance.context", version="1.0.0", handler=context)
define_tool(id="conformance.defaults", version="1.0.0", handler=lambda input: input)


def hold(input):
    print("hold: " + input["release"])
    time.sleep(input["ms"] / 1000)
    return {"released": True}


define_tool(id="conformance.hold", version="1.0.0", handler=hold)


def noisy(input):
    print("noisy: a line on stdout")
    print('{"v":2,"kind":"result","output":{"ok":false}}')
    print("noisy: a line on stderr", file=__import__("sys").stderr)
    return {"ok": True}


define_tool(id="conformance.noisy", version="1.0.0", handler=noisy)
define_tool(id="conformance.process-env", version="1.0.0", handler=lambda input: {"names": sorted(os.environ)})


def sleep(input):
    time.sleep(input["ms"] / 1000)
    return {"slept": input["ms"]}


define_tool(id="conformance.sleep", version="1.0.0", handler=sleep)


def throws(input):
    raise Error("boom")


define_tool(id="conformance.throws", version="1.0.0", handler=throws)

# What JavaScript's trim() takes away: its white space and line terminators.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def min_length(config, trace):
    m = config.get("minLength", 1)
    m = m if isinstance(m, (int, float)) and not isinstance(m, bool) else 1
    output = trace.get("output") if isinstance(trace, dict) else None
    s = output if isinstance(output, str) else ""
    # The length counts UTF-16 code units, as the existing services do.
    n = sum(2 if ord(c) > 0xFFFF else 1 for c in s.strip(_JS_SPACE))
    return {"passed": True} if n >= m else {"passed": False, "reason": "too short"}


define_check(id="conformance.checks.min-length", guardrail="conformance.min-length", action={"on-violation": "halt"},
             severity="error", config_schema={"type": "object", "properties": {"minLength": {"type": "integer", "minimum": 0, "default": 1}}},
             handler=min_length)


def check_throws(config, trace):
    raise Error("check boom")


define_check(id="conformance.checks.throws", guardrail="conformance.check-throws", action={"on-violation": "log-only"}, handler=check_throws)
