// Regenerates golden.json from cases.json with real Ajv 2020 (allErrors,
// Ajv's default strict mode, warnings off, ajv-formats), the validator of the existing pack services:
//   make ajv-golden   (or: npm install --prefix /tmp/ajv ajv ajv-formats && node gen.mjs /tmp/ajv)
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const prefix = process.argv[2] ?? "/tmp/ajv";
const require = createRequire(join(prefix, "node_modules", "x.js"));
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats");

const cases = JSON.parse(readFileSync(join(here, "cases.json"), "utf8"));
const out = cases.map(({ name, schema, data }) => {
  const ajv = new Ajv2020({ allErrors: true, logger: false });
  addFormats(ajv);
  let validate;
  try {
    validate = ajv.compile(schema);
  } catch (e) {
    return { name, compileError: e.message };
  }
  const valid = validate(data);
  return { name, valid, errors: valid ? [] : validate.errors };
});
writeFileSync(join(here, "golden.json"), JSON.stringify(out, null, 1) + "\n");
console.log(`wrote ${out.length} cases`);
