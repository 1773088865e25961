"""packd_sdk's own tests, on the host's Python (make py-sdk-test): what a
pack's definitions register, and what they refuse."""

import importlib
import sys
import unittest

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


if __name__ == "__main__":
    sys.exit(unittest.main())
