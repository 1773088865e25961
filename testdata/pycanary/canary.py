"""An isolation canary written in Python: it keeps what every call gave it
in as many kinds of state as a Python pack can hold (a module global, a
set, a growing list, os.environ, sys.modules, builtins, a class
attribute, a reference cycle only the collector frees, a generator left
half run) and answers with what it finds of earlier calls. Under packd
every call must find nothing:
{"last":null,"tenants":[],"heap":0,"env":"","modules":false,"builtins":null,"klass":null,"cycles":0,"gen":0}.
"""

import builtins
import gc
import os
import random
import sys

from packd_sdk import define_tool

last = None
tenants = set()
heap = []
drawn_at_init = random.random()


class Kept:
    value = None


class Cycle:
    freed = 0

    def __init__(self):
        self.me = self

    def __del__(self):
        Cycle.freed += 1


def counter():
    n = 0
    while True:
        n += 1
        yield n


gen = counter()


def keep(input, ctx):
    global last
    found = {
        "last": last,
        "tenants": sorted(tenants),
        "heap": len(heap),
        "env": os.environ.get("CANARY_LAST", ""),
        "modules": "canary_last" in sys.modules,
        "builtins": getattr(builtins, "canary_last", None),
        "klass": Kept.value,
        "cycles": Cycle.freed,
        "gen": next(gen) - 1,
    }
    last = input
    tenants.add(ctx.get("tenantId"))
    heap.append(repr(input) * 1000)
    os.environ["CANARY_LAST"] = repr(input)
    sys.modules["canary_last"] = sys
    builtins.canary_last = input
    Kept.value = input
    Cycle()
    gc.collect()
    return found


define_tool(id="canary.keep", version="1.0.0", input={"type": "object"}, output={"type": "object"}, handler=keep)

# random in a pooled call: two draws, and one made when the module loaded
# (the snapshot's). Every call must draw numbers of its own.
define_tool(id="canary.random", version="1.0.0", input={"type": "object"}, output={"type": "object"},
            handler=lambda input: {"atInit": drawn_at_init, "draws": [random.random(), random.random()]})


def throw(input):
    raise ValueError("boom " + str(input.get("n")))


define_tool(id="canary.throw", version="1.0.0", input={"type": "object"}, handler=throw)
