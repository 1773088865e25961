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
dict with a bool ``passed``.

The same module runs inside packd (frozen into its Python runtime) and on
the author's own ``python3``, where a pack's tests call the handlers.
"""

import json as _json

__all__ = ["define_tool", "define_check", "tool", "check", "tools", "checks"]

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
