"""packd's Python runtime, its Python half: the pack's modules and its calls.

runtime.c imports this module at _initialize, so that the pooled snapshot
holds it and the pack it imports; then each call is call(request bytes),
and the description describe(). Each answers (status, bytes) as the guest
ABI says (abi/GUEST-ABI.md): 0 and the output, 1 and a throw, 2 and
nothing for an id the pack does not serve.

The pack's sources come from the module's bundle (_packd.bundle()): JSON
{"main": [module names], "modules": {name: {"file": "tools.py",
"source": "...", "package": false, "library": false}}}. They are imported
from there, with their file names, so that a traceback names the pack's
own lines. The bundle holds the modules of the standard library the
pack's sources import that the runtime does not carry as well (library:
true), taken by `packd build-py` from those freeze.py set aside.
"""

import json
import sys
import traceback
from importlib.machinery import ModuleSpec

import _packd
import packd_sdk


class _BundleImporter:
    """Finds and loads the pack's modules from its bundle."""

    def __init__(self, modules):
        self.modules = modules

    def find_spec(self, name, path=None, target=None):
        m = self.modules.get(name)
        if m is None:
            return None
        spec = ModuleSpec(name, self, origin=m["file"], is_package=bool(m.get("package")))
        spec.has_location = True
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        m = self.modules[module.__name__]
        module.__file__ = m["file"]
        exec(compile(m["source"], m["file"], "exec", dont_inherit=True), module.__dict__)
        if module.__name__ == "asyncio" and m.get("library"):
            _asyncio_loaded(module)

    def get_source(self, name):
        return self.modules[name]["source"]

    def is_package(self, name):
        return bool(self.modules[name].get("package"))


def _load():
    raw = _packd.bundle()
    if not raw:
        return
    bundle = json.loads(raw)
    modules = bundle.get("modules", {})
    sys.meta_path.insert(0, _BundleImporter(modules))
    files = {m["file"] for m in modules.values() if not m.get("library")}
    for name in bundle.get("main", []):
        try:
            __import__(name)
        except BaseException as exc:
            # The whole traceback on stderr; the load error packd reports
            # says what was raised, and where in the pack.
            traceback.print_exception(exc)
            words, where = str(exc), ""
            if isinstance(exc, SyntaxError) and exc.filename in files:
                words, where = exc.msg, " (%s, line %s)" % (exc.filename, exc.lineno)
            else:
                for frame in reversed(traceback.extract_tb(exc.__traceback__)):
                    if frame.filename in files:
                        where = " (%s, line %d)" % (frame.filename, frame.lineno)
                        break
            raise ImportError("importing %s failed: %s: %s%s" % (name, type(exc).__name__, words, where)) from None


def _dumps(value):
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                      default=packd_sdk.json_default).encode("utf-8")


def _throw(exc):
    """The throw answer for exc: its type, its words and its traceback."""
    stack = "".join(traceback.format_exception(exc))
    return _dumps({"name": type(exc).__name__, "message": str(exc), "stack": stack})


def _asyncio_loaded(asyncio):
    """asyncio's loops become packd's (asyncio.run, new_event_loop): the
    selector loop asyncio has wants a socket pair to wake itself, which
    WASI has not, and a pack has no file or socket to wait on. packd's loop
    runs tasks, callbacks and timers; where asyncio's would wait on the
    selector it sleeps until the next timer is due (WASI's clock, under
    the call's deadline), and it raises where asyncio's would wait for
    ever: nothing ready, no timer, so nothing the pack awaits can
    complete."""
    import time

    class Waits:
        def select(self, timeout):
            if timeout is None:
                raise RuntimeError("the handler awaits something nothing will complete: no task is ready and no timer is due (packd's asyncio loop has no files, sockets or threads to wait on)")
            if timeout > 0:
                time.sleep(timeout)
            return []

        def close(self):
            pass

    class PackdEventLoop(asyncio.BaseEventLoop):
        def __init__(self):
            super().__init__()
            self._selector = Waits()

        def _process_events(self, event_list):
            pass

        def _write_to_self(self):
            pass

    class Policy(asyncio.events.BaseDefaultEventLoopPolicy):
        _loop_factory = PackdEventLoop

    asyncio.PackdEventLoop = PackdEventLoop
    asyncio.set_event_loop_policy(Policy())


def _run(result):
    """result, or what the coroutine result returns, run to its end: by
    asyncio.run when the pack has imported asyncio (its loop is packd's),
    else by awaiting nothing but other coroutines."""
    if not hasattr(result, "send") or not hasattr(result, "__await__"):
        return result
    asyncio = sys.modules.get("asyncio")
    if asyncio is not None and asyncio.iscoroutine(result):
        return asyncio.run(result)
    try:
        while True:
            result.send(None)
            result.throw(RuntimeError("a handler awaited something packd cannot wait for: a pack that awaits asyncio's sleeps, tasks or futures imports asyncio where it loads"))
    except StopIteration as stop:
        return stop.value


def _reseed():
    """random's generator seeded anew for this call: the snapshot holds the
    seed drawn when the pack loaded, which every pooled call would start
    from (one tenant could predict another's numbers). The seed comes from
    random_get, which a recorded call's tape holds."""
    r = sys.modules.get("random")
    if r is not None:
        r.seed()


def call(raw):
    try:
        _reseed()
        req = json.loads(raw)
        kind = req.get("kind")
        if kind == "invoke":
            tid = req.get("tool", {}).get("id")
            t = packd_sdk._tools.get(tid) or packd_sdk._tools.get("*")
            if t is None:
                return 2, b""
            args = (req.get("input"), req.get("ctx", {}))
        elif kind == "check-invoke":
            t = packd_sdk._checks.get(req.get("check", {}).get("id"))
            if t is None:
                return 2, b""
            args = (req.get("config"), req.get("trace"))
        else:
            raise ValueError("packd sent a request of kind %r" % (kind,))
        first = t.decode(args[0]) if kind == "invoke" else args[0]
        out = _run(t.handler(first, args[1]) if t.two else t.handler(first))
        return 0, _dumps(out)
    except BaseException as exc:  # the call's, whatever it is
        return 1, _throw(exc)


def describe():
    try:
        tools, checks = packd_sdk._tools, packd_sdk._checks
        description = {
            "tools": list(tools),
            "checks": list(checks),
            "toolSpecs": [t.spec for t in tools.values()],
            "checkSpecs": [c.spec for c in checks.values()],
        }
        if packd_sdk._env["required"] or packd_sdk._env["optional"]:
            description["env"] = packd_sdk._env
        return 0, _dumps(description)
    except BaseException as exc:
        return 1, _throw(exc)


_load()
