"""Python that recurses, spins, backtracks, allocates, sleeps past its
deadline, swarms asyncio's loop with tasks or never ends: each
tool must be stopped within its call's stack, fuel, deadline and memory,
with its protocol error, and packd must go on serving (TestPyHostile)."""

import asyncio
import json
import re

from packd_sdk import define_tool


def recurse(n):
    return recurse(n + 1) + 1


def nested(input):
    # A list nested 200,000 deep: json.dumps recurses in C.
    v = []
    for _ in range(200_000):
        v = [v]
    return json.dumps(v)


def endless():
    n = 0
    while True:
        n += 1
        yield n


def spin(input):
    while True:
        pass


async def asleep(input):
    # asyncio's loop sleeps until its next timer: an hour, past any deadline.
    await asyncio.sleep(3600)


async def swarm(input):
    # Every task starts two more, for ever: the loop never runs dry.
    loop = asyncio.get_running_loop()

    async def spawn():
        loop.create_task(spawn())
        loop.create_task(spawn())

    await spawn()
    await asyncio.sleep(3600)


def tool(name, handler):
    define_tool(id="pyhostile." + name, version="1.0.0", input={"type": "object"}, handler=handler)


tool("recurse", lambda input: recurse(0))
tool("nested", nested)
tool("bigint", lambda input: str(10 ** 100_000))
tool("backtrack", lambda input: bool(re.match(r"(a+)+$", "a" * 64 + "b")))
tool("loop", spin)
tool("endless", lambda input: list(endless()))
tool("alloc", lambda input: len(bytearray(1 << 30)))
tool("asleep", asleep)
tool("swarm", swarm)
tool("ok", lambda input: input)
