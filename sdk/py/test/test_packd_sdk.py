"""packd_sdk's own tests, on the host's Python (make py-sdk-test): what a
pack's definitions register, and what they refuse."""

import dataclasses
import importlib
import sys
import unittest
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import packd_sdk


class DefineTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(packd_sdk)  # every test starts with no definitions

    def test_a_tool_and_a_check_register_their_specs(self):
        handler = packd_sdk.define_tool(id="p.echo", version="1.0.0", description="Echo.",
                                        input={"type": "object"}, handler=lambda input: input)
        self.assertEqual(handler({"a": 1}), {"a": 1})

        @packd_sdk.check(id="p.not-empty", kind="zero-llm", config_schema={"type": "object"})
        def not_empty(config, trace):
            return {"passed": bool(trace)}

        self.assertEqual(packd_sdk.tools()["p.echo"].spec,
                         {"id": "p.echo", "version": "1.0.0", "description": "Echo.", "input": {"type": "object"}})
        self.assertEqual(packd_sdk.checks()["p.not-empty"].spec,
                         {"id": "p.not-empty", "kind": "zero-llm", "configSchema": {"type": "object"}})
        self.assertEqual(not_empty({}, "x"), {"passed": True})

    def test_refusals_say_what_is_wrong(self):
        packd_sdk.define_tool(id="p.t", handler=lambda input: input)
        for kwargs, error, words in [
            ({"id": "p.t", "handler": lambda input: input}, ValueError, "defined twice"),
            ({"id": "", "handler": lambda input: input}, TypeError, "non-empty string"),
            ({"id": 7, "handler": lambda input: input}, TypeError, "non-empty string"),
            ({"id": "p.u", "handler": "not callable"}, TypeError, "must be callable"),
            ({"id": "p.v", "handler": lambda input: input, "input": {"default": object()}}, TypeError, "its spec is not JSON"),
            ({"id": "p.w", "handler": lambda input: input, "limits": {"fuel": float("nan")}}, TypeError, "its spec is not JSON"),
        ]:
            with self.assertRaises(error) as caught:
                packd_sdk.define_tool(**kwargs)
            self.assertIn(words, str(caught.exception))
        self.assertEqual(sorted(packd_sdk.tools()), ["p.t"])


@dataclasses.dataclass
class Item:
    name: str
    qty: int = 1


@dataclasses.dataclass
class Order:
    id: Annotated[str, {"minLength": 1}]
    items: list[Item]
    note: Optional[str] = None
    mode: Literal["a", "b"] = "a"


class Point(TypedDict):
    x: float
    tags: NotRequired[dict[str, Any]]


class SchemaTest(unittest.TestCase):
    def setUp(self):
        importlib.reload(packd_sdk)

    def test_a_dataclass_is_an_object_of_its_fields(self):
        self.assertEqual(packd_sdk.schema_of(Order), {
            "type": "object",
            "properties": {
                "id": {"type": "string", "minLength": 1},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "qty": {"type": "integer", "default": 1}},
                    "additionalProperties": False, "required": ["name"]}},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                "mode": {"enum": ["a", "b"], "default": "a"},
            },
            "additionalProperties": False,
            "required": ["id", "items"],
        })

    def test_a_typeddict_requires_its_required_keys(self):
        self.assertEqual(packd_sdk.schema_of(Point), {
            "type": "object", "properties": {"x": {"type": "number"}, "tags": {"type": "object", "additionalProperties": {}}},
            "required": ["x"], "additionalProperties": False})

    def test_what_has_no_schema_says_so(self):
        for tp in (bytes, dict[int, str], complex):
            with self.assertRaises(TypeError) as caught:
                packd_sdk.schema_of(tp)
            self.assertIn("schema_of:", str(caught.exception))

    def test_a_typed_tool_gets_and_gives_dataclasses(self):
        packd_sdk.define_tool(id="p.order", input=Order, output=Order, handler=lambda order: order)
        t = packd_sdk.tools()["p.order"]
        self.assertEqual(t.spec["input"], packd_sdk.schema_of(Order))
        order = t.decode({"id": "7", "items": [{"name": "tea", "qty": 2}], "note": None, "mode": "b"})
        self.assertEqual(order, Order("7", [Item("tea", 2)], None, "b"))
        self.assertEqual(t.encode(t.handler(order)), {"id": "7", "items": [{"name": "tea", "qty": 2}], "note": None, "mode": "b"})


    def test_a_handlers_annotations_are_its_schemas(self):
        def place(order: Order, ctx) -> Item:
            return order.items[0]

        packd_sdk.define_tool(id="p.place", handler=place)
        t = packd_sdk.tools()["p.place"]
        self.assertEqual(t.spec["input"], packd_sdk.schema_of(Order))
        self.assertEqual(t.spec["output"], packd_sdk.schema_of(Item))
        self.assertEqual(t.encode(place(t.decode({"id": "1", "items": [{"name": "tea", "qty": 3}]}), {})), {"name": "tea", "qty": 3})
        # No annotations, no schemas; one that has none says so.
        packd_sdk.define_tool(id="p.plain", handler=lambda input: input)
        self.assertNotIn("input", packd_sdk.tools()["p.plain"].spec)

        def odd(x: bytes):
            return x

        with self.assertRaises(TypeError) as caught:
            packd_sdk.define_tool(id="p.odd", handler=odd)
        self.assertIn("schema_of: no JSON Schema", str(caught.exception))


if __name__ == "__main__":
    sys.exit(unittest.main())
