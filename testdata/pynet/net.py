"""pynet: a test pack in Python that reaches the network through packd's
egress. net.fetch sends the request its input describes, with the call's
secret apiToken as a bearer token, and answers {status, body, seen} (seen:
the response's X-Seen header) or, when packd refused or failed it,
{reason, message}; net.throws raises."""

from packd_sdk import EgressError, define_tool, fetch


def get(input, ctx):
    headers = {}
    token = (ctx.get("secrets") or {}).get("apiToken")
    if token:
        headers["Authorization"] = "Bearer " + token
    try:
        res = fetch(input["url"], method=input.get("method", "GET"), headers=headers, body=input.get("body"))
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
    input={
        "type": "object",
        "properties": {"url": {"type": "string", "minLength": 1}, "method": {"enum": ["GET", "POST"], "default": "GET"}, "body": {"type": "string"}},
        "required": ["url"],
        "additionalProperties": False,
    },
    output={"type": "object"},
    network={"kind": "allowlist", "hosts": ["127.0.0.1"]},
    handler=get,
)


class LedgerError(Exception):
    pass


def throws(input):
    raise LedgerError("the ledger is closed")


define_tool(id="net.throws", version="1.0.0", input={"type": "object"}, output={"type": "object"}, handler=throws)
