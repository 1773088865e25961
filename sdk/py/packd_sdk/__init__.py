"""packd_sdk: a pack's tools and guardrail checks in Python.

    from packd_sdk import define_tool

    define_tool(
        id="echo.echo",
        version="1.0.0",
        description="Answers with its input.",
        input={"type": "object"},
        handler=lambda input, ctx: input,
    )

A handler takes the call's input (checked against the tool's input schema
by packd before it runs) and, if it takes a second argument, the call's
context (the caller's callContext, as sent); it returns the output, any
value JSON can hold, or raises. An ``async def`` handler is run to its end.
A check's handler takes the check's config and the trace, and returns a
dict with a bool ``passed``. ``fetch`` sends an HTTP request through packd,
under the tool's ``network`` in the index.

The same module runs inside packd (frozen into its Python runtime) and on
the author's own ``python3``, where a pack's tests call the handlers.
"""

import json as _json

__all__ = ["define_tool", "define_check", "tool", "check", "tools", "checks", "fetch", "Response", "EgressError"]

_tools = {}
_checks = {}


class Tool:
    """A tool: its id, its handler and what ``packd index`` writes of it."""

    __slots__ = ("id", "handler", "spec")

    def __init__(self, id, handler, spec):
        self.id, self.handler, self.spec = id, handler, spec


class Check:
    """A guardrail check: its id, its handler and its spec."""

    __slots__ = ("id", "handler", "spec")

    def __init__(self, id, handler, spec):
        self.id, self.handler, self.spec = id, handler, spec


def _spec(kind, id, spec):
    """spec, checked to be JSON (what packd index writes of it)."""
    try:
        _json.dumps(spec, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError("%s %r: its spec is not JSON: %s" % (kind, id, exc)) from None
    return spec


def _id(kind, id):
    if not isinstance(id, str) or not id:
        raise TypeError("a %s's id must be a non-empty string, not %r" % (kind, id))
    return id


def define_tool(*, id, handler, version=None, description=None, input=None, output=None, limits=None, network=None):
    """Defines the tool ``id``; returns the handler."""
    _id("tool", id)
    if not callable(handler):
        raise TypeError("tool %r: its handler must be callable" % id)
    if id in _tools:
        raise ValueError("tool %r is defined twice" % id)
    spec = {"id": id}
    for key, value in (("version", version), ("description", description), ("input", input),
                       ("output", output), ("limits", limits), ("network", network)):
        if value is not None:
            spec[key] = value
    _tools[id] = Tool(id, handler, _spec("tool", id, spec))
    return handler


def define_check(*, id, handler, guardrail=None, kind=None, action=None, severity=None, config_schema=None,
                 limits=None, network=None):
    """Defines the guardrail check ``id``; returns the handler."""
    _id("check", id)
    if not callable(handler):
        raise TypeError("check %r: its handler must be callable" % id)
    if id in _checks:
        raise ValueError("check %r is defined twice" % id)
    spec = {"id": id}
    for key, value in (("guardrail", guardrail), ("kind", kind), ("action", action), ("severity", severity),
                       ("configSchema", config_schema), ("limits", limits), ("network", network)):
        if value is not None:
            spec[key] = value
    _checks[id] = Check(id, handler, _spec("check", id, spec))
    return handler


def tool(**spec):
    """A decorator form of define_tool: ``@tool(id="pack.tool")``."""
    return lambda handler: define_tool(handler=handler, **spec)


def check(**spec):
    """A decorator form of define_check: ``@check(id="pack.check")``."""
    return lambda handler: define_check(handler=handler, **spec)


def tools():
    """The tools defined so far, by id."""
    return dict(_tools)


def checks():
    """The checks defined so far, by id."""
    return dict(_checks)


class EgressError(Exception):
    """packd refused or failed a request: ``reason`` is one of the guest
    ABI's (host-not-allowed, network-not-allowed, failed, ...)."""

    def __init__(self, reason, message):
        super().__init__("%s: %s" % (reason, message))
        self.reason, self.message = reason, message


class Response:
    """An HTTP response: ``status``, ``headers`` (each name, as the server
    spelt it, to its values) and ``body`` (bytes)."""

    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name, default=None):
        """The first value of header ``name`` (any case), or default."""
        name = name.lower()
        for key, values in self.headers.items():
            if key.lower() == name and values:
                return values[0]
        return default

    def text(self, encoding="utf-8"):
        return self.body.decode(encoding, "replace")

    def json(self):
        return _json.loads(self.body)


def fetch(url, *, method="GET", headers=None, body=None, json=None):
    """Sends one HTTP request through packd and answers its Response.

    ``headers`` maps a name to a value or a list of values; ``body`` is bytes
    or str (UTF-8); ``json``, instead of a body, is sent as JSON. packd
    follows redirects and decodes gzip; a request it refuses, or that fails,
    raises EgressError. Inside packd only (the host's Python has no egress).
    """
    try:
        import _packd
    except ImportError:
        raise RuntimeError("packd_sdk.fetch runs inside packd (its egress); in a test, give the handler what it would fetch") from None
    hs = {}
    for name, value in (headers or {}).items():
        hs[str(name)] = [value] if isinstance(value, str) else [str(v) for v in value]
    if json is not None:
        if body is not None:
            raise TypeError("fetch: give body or json, not both")
        body = _json.dumps(json, ensure_ascii=False, separators=(",", ":"))
        if not any(k.lower() == "content-type" for k in hs):
            hs["Content-Type"] = ["application/json"]
    if isinstance(body, str):
        body = body.encode("utf-8")
    head = _json.dumps({"method": method, "url": url, "headers": hs}).encode("utf-8")
    raw_head, raw_body = _packd.http(head, body or b"")
    answer = _json.loads(raw_head)
    error = answer.get("error")
    if error:
        raise EgressError(error.get("reason", "failed"), error.get("message", ""))
    return Response(answer.get("status", 0), answer.get("headers") or {}, raw_body)
