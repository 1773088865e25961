"""pynet: a test pack in Python that reaches the network through packd's
egress. net.fetch (its input a dataclass) sends the request its input
describes, with the call's
secret apiToken as a bearer token, and answers {status, body, seen} (seen:
the response's X-Seen header) or, when packd refused or failed it,
{reason, message}; net.throws raises."""

from dataclasses import dataclass
from typing import Annotated, Literal, Optional

from packd_sdk import EgressError, define_tool, fetch


@dataclass
class Fetch:
    url: Annotated[str, {"minLength": 1}]
    method: Literal["GET", "POST"] = "GET"
    body: Optional[str] = None


def get(input: Fetch, ctx):
    headers = {}
    token = (ctx.get("secrets") or {}).get("apiToken")
    if token:
        headers["Authorization"] = "Bearer " + token
    try:
        res = fetch(input.url, method=input.method, headers=headers, body=input.body)
    except EgressError as e:
        return {"reason": e.reason, "message": e.message}
    out = {"status": res.status, "body": res.text()}
    if res.header("x-seen") is not None:
        out["seen"] = res.header("x-seen")
    return out


define_tool(
    id="net.fetch",
    version="1.0.0",
    description="Fetches a URL.",
    input=Fetch,
    output={"type": "object"},
    network={"kind": "allowlist", "hosts": ["127.0.0.1"]},
    handler=get,
)


class LedgerError(Exception):
    pass


def throws(input):
    raise LedgerError("the ledger is closed")


define_tool(id="net.throws", version="1.0.0", input={"type": "object"}, output={"type": "object"}, handler=throws)
