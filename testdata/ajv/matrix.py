#!/usr/bin/env python3
"""Writes the keyword x instance-type cases of cases.json (those named
"matrix/..."), keeping the hand-written ones: every keyword alone and
beside the single type it applies to, on an instance of every JSON type.
Then `make ajv-golden` records what real Ajv reports for each."""
import json, os

here = os.path.dirname(os.path.abspath(__file__))
instances = {
    "null": None, "boolean": True, "integer": 3, "number": 2.5, "string": "ab",
    "array": [1, "a", 1],
    # keys that are array indices: JavaScript puts them first, in numeric order
    "object": json.loads('{"b":1,"10":2,"a":3,"2":4}'),
}
# keyword name -> (the type its keywords belong to, or None, schema fragment)
keywords = [
    ("const", None, {"const": "ab"}),
    ("enum", None, {"enum": ["x", 1]}),
    ("not", None, {"not": {}}),
    ("anyOf", None, {"anyOf": [{"type": "string"}, {"type": "object"}]}),
    ("oneOf", None, {"oneOf": [{"minimum": 0}, {"type": "number"}]}),
    ("allOf", None, {"allOf": [{"type": "string"}, {"minLength": 3}]}),
    ("if-then-else", None, {"if": {"type": "number"}, "then": {"minimum": 5}, "else": {"type": "object"}}),
    ("ref", None, {"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s"}),
    ("maximum", "number", {"maximum": 1}),
    ("minimum", "number", {"minimum": 5}),
    ("exclusiveMaximum", "number", {"exclusiveMaximum": 2}),
    ("exclusiveMinimum", "number", {"exclusiveMinimum": 4}),
    ("multipleOf", "number", {"multipleOf": 2}),
    ("maxLength", "string", {"maxLength": 1}),
    ("minLength", "string", {"minLength": 3}),
    ("pattern", "string", {"pattern": "^z"}),
    ("format", "string", {"format": "email"}),
    ("maxItems", "array", {"maxItems": 2}),
    ("minItems", "array", {"minItems": 4}),
    ("prefixItems", "array", {"prefixItems": [{"type": "string"}]}),
    ("items", "array", {"items": {"type": "string"}}),
    ("items-false", "array", {"items": False}),
    ("prefixItems-items-false", "array", {"prefixItems": [{}], "items": False}),
    ("contains", "array", {"contains": {"type": "null"}}),
    ("minContains", "array", {"contains": {"type": "number"}, "minContains": 3}),
    ("maxContains", "array", {"contains": {"type": "number"}, "maxContains": 1}),
    ("uniqueItems", "array", {"uniqueItems": True}),
    ("unevaluatedItems", "array", {"prefixItems": [{}], "unevaluatedItems": False}),
    ("maxProperties", "object", {"maxProperties": 1}),
    ("minProperties", "object", {"minProperties": 5}),
    ("required", "object", {"required": ["x", "10"]}),
    ("propertyNames", "object", {"propertyNames": {"maxLength": 1}}),
    ("additionalProperties", "object", {"additionalProperties": False}),
    ("additionalProperties-schema", "object", {"properties": {"a": {}}, "additionalProperties": {"type": "string"}}),
    ("properties", "object", {"properties": {"a": {"type": "string"}, "10": {"type": "string"}, "2": {"type": "string"}}}),
    ("patternProperties", "object", {"patternProperties": {"^[0-9]+$": {"type": "string"}, "^[ab]$": {"type": "string"}}}),
    ("dependentRequired", "object", {"dependentRequired": {"a": ["x"], "10": ["y"]}}),
    ("dependentSchemas", "object", {"dependentSchemas": {"a": {"required": ["y"]}}}),
    ("unevaluatedProperties", "object", {"properties": {"a": {}}, "unevaluatedProperties": False}),
]

path = os.path.join(here, "cases.json")
cases = [c for c in json.load(open(path)) if not c["name"].startswith("matrix/")]
for name, group, fragment in keywords:
    variants = [("", fragment)]
    if group:
        variants.append(("+type", {"type": group, **fragment}))
    for suffix, schema in variants:
        for tname, data in instances.items():
            cases.append({"name": f"matrix/{name}{suffix}/{tname}", "schema": schema, "data": data})
with open(path, "w") as f:
    f.write("[\n" + ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases) + "\n]\n")
print(f"{len(cases)} cases")
