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

import dataclasses as _dataclasses
import json as _json
import typing as _typing

__all__ = ["define_tool", "define_check", "declare_env", "tool", "check", "tools", "checks", "fetch", "Response", "EgressError",
           "schema_of", "json_default"]

_tools = {}
_checks = {}
_env = {"required": [], "optional": []}


def declare_env(*, required=(), optional=()):
    """Declares the process environment names the pack reads from
    os.environ: packd index writes them into the index, and packd gives the
    module those (and only those) that are set. A required one that is
    unset keeps the service from being ready."""
    for kind, names in (("required", required), ("optional", optional)):
        for name in names:
            if not isinstance(name, str) or not name:
                raise TypeError("declare_env: %r is not a variable's name" % (name,))
            if name not in _env[kind]:
                _env[kind].append(name)


class Tool:
    """A tool: its id, its handler, what ``packd index`` writes of it, the
    Python type its input was given as (None: a schema), and whether the
    handler takes the call's context too."""

    __slots__ = ("id", "handler", "spec", "input_type", "two")

    def __init__(self, id, handler, spec, input_type=None):
        self.id, self.handler, self.spec, self.input_type = id, handler, spec, input_type
        self.two = _takes_two(handler)

    def decode(self, value):
        """The handler's input: value as the input type says (a dataclass
        is made of its fields), or as it is."""
        return _from_json(self.input_type, value) if self.input_type is not None else value

    def encode(self, value):
        """What packd answers for value, as JSON's values (a dataclass as a
        dict): what a pack's tests compare."""
        return _plain(value)


class Check:
    """A guardrail check: its id, its handler, its spec, and whether the
    handler takes the trace too."""

    __slots__ = ("id", "handler", "spec", "two")

    def __init__(self, id, handler, spec):
        self.id, self.handler, self.spec = id, handler, spec
        self.two = _takes_two(handler)


def _takes_two(fn):
    """Whether fn takes two arguments (the input and the context, or a
    check's config and trace), else one: decided once, at its definition."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    n = code.co_argcount - (1 if hasattr(fn, "__self__") else 0)
    return n >= 2 or bool(code.co_flags & 0x04)  # CO_VARARGS


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
    """Defines the tool ``id``; returns the handler. ``input`` and ``output``
    are JSON Schema (dicts) or Python types (schema_of): a TypedDict, a
    dataclass, ... A dataclass input reaches the handler as an instance.
    Left out, they are the handler's annotations, when it has them (its
    first parameter's and its return's)."""
    _id("tool", id)
    if not callable(handler):
        raise TypeError("tool %r: its handler must be callable" % id)
    if id in _tools:
        raise ValueError("tool %r is defined twice" % id)
    if input is None or output is None:
        hinted_in, hinted_out = _hints(id, handler)
        input = hinted_in if input is None else input
        output = hinted_out if output is None else output
    input_type = input if _is_type(input) else None
    if input_type is not None:
        input = schema_of(input_type)
    if _is_type(output):
        output = schema_of(output)
    spec = {"id": id}
    for key, value in (("version", version), ("description", description), ("input", input),
                       ("output", output), ("limits", limits), ("network", network)):
        if value is not None:
            spec[key] = value
    _tools[id] = Tool(id, handler, _spec("tool", id, spec), input_type)
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

    @property
    def status_code(self):
        """status, as httpx and requests name it."""
        return self.status

    @property
    def content(self):
        """body, as httpx and requests name it."""
        return self.body

    def read(self):
        """body, as urllib.request's responses give it."""
        return self.body

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


# Schemas from Python types.

_SCALARS = {str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
            bool: {"type": "boolean"}, type(None): {"type": "null"}}


def _hints(id, handler):
    """The types a handler's annotations give its input (first parameter)
    and output (return), or None for each it lacks."""
    code = getattr(handler, "__code__", None)
    skip = 1 if hasattr(handler, "__self__") else 0  # a bound method's self
    if code is None or code.co_argcount <= skip:
        return None, None
    try:
        hints = _typing.get_type_hints(handler, include_extras=True)
    except Exception as exc:
        raise TypeError("tool %r: its handler's annotations: %s" % (id, exc)) from None
    return hints.get(code.co_varnames[skip]), hints.get("return")


def _is_type(value):
    return isinstance(value, type) or _typing.get_origin(value) is not None


def schema_of(tp):
    """The JSON Schema of a Python type: str, int, float, bool, None, Any,
    list[X], dict[str, X], Optional[X], Union[...], Literal[...], a
    TypedDict (its required keys required; no others allowed), a dataclass
    (fields without a default required; its defaults the schema's), and
    Annotated[X, {...}] (X's schema with those keywords: minLength, ...).
    What pydantic adds (validators, coercion) is not here: packd validates
    the schema, and the handler gets what passed."""
    if tp is _typing.Any:
        return {}
    if isinstance(tp, type) and tp in _SCALARS:
        return dict(_SCALARS[tp])
    origin, args = _typing.get_origin(tp), _typing.get_args(tp)
    if origin is _typing.Annotated:
        out = schema_of(args[0])
        for extra in args[1:]:
            if isinstance(extra, dict):
                out.update(extra)
        return out
    if origin is _typing.Literal:
        return {"enum": list(args)}
    if origin is _typing.Union or (origin is not None and getattr(origin, "__name__", "") == "UnionType"):
        return {"anyOf": [schema_of(a) for a in args]}
    if origin in (list, tuple, set, frozenset) or tp in (list, tuple):
        return {"type": "array", "items": schema_of(args[0])} if args else {"type": "array"}
    if origin is dict or tp is dict:
        if args and args[0] is not str:
            raise TypeError("schema_of: a dict's keys must be str (JSON's), not %r" % (args[0],))
        return {"type": "object", "additionalProperties": schema_of(args[1])} if args else {"type": "object"}
    if _typing.is_typeddict(tp):
        hints = _typing.get_type_hints(tp, include_extras=True)
        return {"type": "object", "properties": {k: schema_of(_unrequire(v)) for k, v in hints.items()},
                "required": sorted(tp.__required_keys__), "additionalProperties": False}
    if _dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = _typing.get_type_hints(tp, include_extras=True)
        props, required = {}, []
        for f in _dataclasses.fields(tp):
            p = schema_of(hints[f.name])
            if f.default is not _dataclasses.MISSING:
                p["default"] = _plain(f.default)
            elif f.default_factory is _dataclasses.MISSING:
                required.append(f.name)
            props[f.name] = p
        out = {"type": "object", "properties": props, "additionalProperties": False}
        if required:
            out["required"] = required
        return out
    raise TypeError("schema_of: no JSON Schema for %r (give a JSON Schema dict)" % (tp,))


def _unrequire(tp):
    """X of Required[X] or NotRequired[X] (a TypedDict's keys say which)."""
    if _typing.get_origin(tp) in (_typing.Required, _typing.NotRequired):
        return _typing.get_args(tp)[0]
    return tp


def _from_json(tp, value):
    """value (JSON's, already valid against schema_of(tp)) as tp: dataclasses
    made of their fields, inside lists, dicts and unions too."""
    origin, args = _typing.get_origin(tp), _typing.get_args(tp)
    if origin is _typing.Annotated:
        return _from_json(args[0], value)
    if _dataclasses.is_dataclass(tp) and isinstance(tp, type) and isinstance(value, dict):
        hints = _typing.get_type_hints(tp, include_extras=True)
        return tp(**{k: _from_json(hints[k], v) for k, v in value.items() if k in hints})
    if origin in (list, tuple, set, frozenset) and args and isinstance(value, list):
        items = [_from_json(args[0], v) for v in value]
        return items if origin is list else origin(items)
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {k: _from_json(args[1], v) for k, v in value.items()}
    if origin is _typing.Union:
        for a in args:  # the first member a dataclass can be made of
            if _dataclasses.is_dataclass(a) and isinstance(value, dict):
                return _from_json(a, value)
    return value


def json_default(value):
    """What json.dumps cannot write itself, as JSON's values: a dataclass
    as its fields, a set as a list (json.dumps's default=; packd writes a
    handler's answer with it)."""
    if _dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in _dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return list(value)
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _plain(value):
    """value as JSON's values, as packd writes it."""
    return _json.loads(_json.dumps(value, default=json_default))
