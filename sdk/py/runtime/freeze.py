"""Freeze Python modules into C for packd's Python runtime.

Run by the build Python (Debian's python3.11, CPython 3.11.2: the very
version of the source the runtime is built from, so its bytecode is the
runtime's):

    python3.11 freeze.py OUT.c LIBRARY.json LIBDIR CONFIG_C SEED... -- NAME=FILE...

It finds every module of the standard library in LIBDIR that the SEED
modules (and the NAME=FILE modules, packd's own) import, directly or not,
leaving out those the runtime has in C (the names CONFIG_C, the build's
Modules/config.c, lists), compiles each and writes OUT.c: the marshalled
code of each as an array, and `packd_frozen`, the table CPython's
PyImport_FrozenModules points to.

The rest of the standard library (but LEFT_OUT and tests) goes in
LIBRARY.json, the library `packd build-py` takes from: each module's
source, its file under LIBDIR and the modules of the library it imports
(anywhere in it, as modulefinder reads them), so that a pack's module
carries those its sources import, and what they import, and no others;
with the names the runtime has already (frozen or in C) and those it
leaves out, so that build-py can say which of a pack's imports packd's
Python does not have. A module that needs one the build lacks
(a C module WASI has no room for: _ssl, _socket, zlib, ...) is frozen all
the same; importing it raises ImportError at run time, as on any Python
built without that module, and the modules that import such a one
optionally go on without it.
"""

import io
import json
import marshal
import modulefinder
import os
import re
import sys
import tokenize


# What a pack cannot use in packd (processes of its own, a terminal, a
# debugger, files on disk: time zone data, package data, a profiler's
# output), what only runs as a program, and what a pack uses only to test
# and document itself: left out, and not followed, so that what the
# modules a pack imports reach through them (doctest from decimal, pdb
# from doctest, everything from pdb) does not come with them. Importing
# one raises ImportError, and build-py warns of it. What only needs them
# (a module that imports one where it loads) is left out with them, so
# that every module the library holds imports (TestPyLibraryImports). The
# modules that only fail when used (tempfile, shutil, subprocess, socket:
# OSError, as there are no files, processes or sockets) import, so that
# those that import them where they load (urllib.request, asyncio,
# logging.config) do.
LEFT_OUT = [
    # programs, terminals, debuggers and profilers
    "__main__", "argparse", "bdb", "cmd", "code", "codeop", "curses", "getopt", "getpass", "idlelib", "pdb", "profile",
    "cProfile", "pstats", "pty", "runpy", "trace", "tty", "turtle", "turtledemo", "tkinter", "webbrowser", "zipapp",
    "json.tool", "asyncio.__main__", "smtpd", "cgitb",
    # testing and documenting code
    "doctest", "test", "unittest", "pydoc", "pydoc_data", "pickletools", "lib2to3",
    # building, installing and describing Python itself
    "_aix_support", "_bootsubprocess", "_osx_support", "compileall", "distutils", "ensurepip", "py_compile",
    "sysconfig", "venv", "importlib.metadata", "pkgutil", "zipimport", "msilib",
    # files on disk, processes, and the protocols and servers of a machine
    "dbm", "glob", "mailbox", "netrc", "sqlite3", "tarfile", "zoneinfo", "multiprocessing",
    "concurrent.futures.process", "asyncio.windows_events", "asyncio.windows_utils", "ssl", "ftplib", "imaplib",
    "nntplib", "poplib", "smtplib", "telnetlib", "http.server", "wsgiref", "xmlrpc",
    # native code, and what CPython's build has not (zlib, bz2 and lzma are
    # not built; oem is Windows')
    "ctypes", "gzip", "bz2", "lzma", "encodings.bz2_codec", "encodings.zlib_codec", "encodings.oem",
    # a joke
    "antigravity",
]


def builtin_names(config_c):
    """The C modules the build links in (Modules/config.c's inittab)."""
    with open(config_c, encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r'\{"([A-Za-z0-9_.]+)",\s*PyInit_', text)) | {"marshal", "_imp", "_warnings", "builtins", "sys", "_string", "_tokenize", "_io", "_frozen_importlib", "_frozen_importlib_external"}


def main(argv):
    if sys.version_info[:2] != (3, 11):
        sys.exit("freeze.py: the build Python must be CPython 3.11 (its bytecode is the runtime's), not " + sys.version)
    out, library_out, libdir, config_c = argv[1:5]
    rest = argv[5:]
    split = rest.index("--") if "--" in rest else len(rest)
    seeds, own = rest[:split], rest[split + 1:]
    builtins = builtin_names(config_c)

    finder = modulefinder.ModuleFinder(path=[libdir], excludes=sorted(builtins) + LEFT_OUT)
    for seed in seeds:
        if seed not in builtins:
            finder.import_hook(seed)
    own_modules = []
    for spec in own:
        name, _, path = spec.partition("=")
        with open(path, encoding="utf-8") as f:
            source = f.read()
        own_modules.append((name, path, source))
        # What packd's own modules import is frozen too.
        mod = finder.add_module(name)
        mod.__file__ = path
        finder.scan_code(compile(source, path, "exec"), mod)

    own_names = {n for n, _, _ in own_modules}
    frozen = []
    for name, mod in sorted(finder.modules.items()):
        path = getattr(mod, "__file__", None)
        if name in own_names or name == "__main__":
            continue
        if not path or not path.endswith(".py") or not os.path.abspath(path).startswith(os.path.abspath(libdir) + os.sep):
            continue
        with open(path, "rb") as f:
            source = f.read()
        is_package = os.path.basename(path) == "__init__.py"
        rel = os.path.relpath(path, libdir)
        code = compile(source, "<frozen " + name + ">", "exec", dont_inherit=True, optimize=0)
        frozen.append((name, marshal.dumps(code), is_package, rel))
    for name, path, source in own_modules:
        code = compile(source, "<packd " + name + ">", "exec", dont_inherit=True, optimize=0)
        frozen.append((name, marshal.dumps(code), path.endswith("__init__.py"), path))

    with open(out, "w", encoding="ascii") as f:
        f.write("/* Made by sdk/py/runtime/freeze.py: the frozen modules of packd's Python runtime. */\n")
        f.write("#include <Python.h>\n\n")
        for i, (name, data, _, rel) in enumerate(frozen):
            f.write("/* %s (%s) */\nstatic const unsigned char M%d[] = {\n" % (name, rel.replace("*/", "* /"), i))
            for j in range(0, len(data), 24):
                f.write(",".join(str(b) for b in data[j:j + 24]) + ",\n")
            f.write("};\n")
        f.write("\nconst struct _frozen packd_frozen[] = {\n")
        for i, (name, data, is_package, _) in enumerate(frozen):
            f.write('    {"%s", M%d, (int)sizeof(M%d), %d, NULL},\n' % (name, i, i, 1 if is_package else 0))
        f.write("    {0, 0, 0, 0, NULL},\n};\n")
    total = sum(len(d) for _, d, _, _ in frozen)
    print("freeze.py: %d modules, %d bytes of code" % (len(frozen), total), file=sys.stderr)
    missing, maybe = finder.any_missing_maybe()
    if missing:
        print("freeze.py: not in the build (ImportError if imported): " + " ".join(sorted(missing)), file=sys.stderr)

    have = sorted({name for name, _, _, _ in frozen})
    library = library_modules(libdir, set(have) | builtins)
    with open(library_out, "w", encoding="ascii") as f:
        json.dump({"python": "%d.%d.%d" % sys.version_info[:3], "builtin": sorted(builtins), "frozen": have,
                   "leftOut": LEFT_OUT, "modules": library}, f, sort_keys=True, separators=(",", ":"))
    print("freeze.py: %d modules in the library, %d bytes of source" % (len(library), sum(len(m["source"]) for m in library.values())), file=sys.stderr)


def left_out(name):
    return any(name == n or name.startswith(n + ".") for n in LEFT_OUT)


def library_modules(libdir, have):
    """Every module under libdir but those in have, LEFT_OUT and tests
    (CPython's test packages among them):
    name -> file (relative to libdir), package, source and the modules of
    the library it imports."""
    found = {}
    for root, dirs, files in os.walk(libdir):
        rel = os.path.relpath(root, libdir)
        parts = [] if rel == "." else rel.split(os.sep)
        if parts and "__init__.py" not in files:
            dirs[:] = []  # not a package: nothing under it can be imported
            continue
        dirs[:] = sorted(d for d in dirs if d.isidentifier() and d not in ("test", "tests", "idle_test"))
        for f in sorted(files):
            stem = f[:-3]
            if not f.endswith(".py") or not stem.isidentifier():
                continue
            name = ".".join(parts + ([] if stem == "__init__" else [stem]))
            if not name or name in have or left_out(name) or parts[:1] == ["__phello__"] or name == "__hello__":
                continue
            path = os.path.join(root, f)
            with open(path, "rb") as fh:
                raw = fh.read()
            encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
            found[name] = {"file": os.path.relpath(path, libdir).replace(os.sep, "/"), "package": stem == "__init__",
                           "source": raw.decode(encoding)}
    scanner = modulefinder.ModuleFinder()
    for name, m in found.items():
        code = compile(m["source"], m["file"], "exec", dont_inherit=True)
        package = name if m["package"] else name.rpartition(".")[0]
        m["imports"] = sorted(n for n in imported(scanner, code, package) if n in found and n != name)
    return found


def imported(scanner, code, package):
    """The modules code imports, anywhere in it (functions, classes), and
    their packages: for `from a import b`, a and a.b (b may be a module)."""
    names = set()
    for what, args in scanner.scan_opcodes(code):
        if what == "store":
            continue
        if what == "absolute_import":
            (fromlist, target), base = args, ""
        else:
            level, fromlist, target = args
            parts = package.split(".") if package else []
            if level - 1 > len(parts):
                continue
            base = ".".join(parts[:len(parts) - (level - 1)])
        full = ".".join(p for p in (base, target) if p)
        if not full:
            continue
        pieces = full.split(".")
        names.update(".".join(pieces[:i + 1]) for i in range(len(pieces)))
        names.update(full + "." + f for f in fromlist or () if f != "*")
    for const in code.co_consts:
        if isinstance(const, type(code)):
            names |= imported(scanner, const, package)
    return names


if __name__ == "__main__":
    main(sys.argv)
