// The echo pack in TypeScript: the tools of wasm-examples/echo (Go) and
// c-echo (C), answering with their input. make bench measures it beside
// them.
import { defineTool } from "@packd/sdk";

defineTool({
  id: "echo.echo",
  version: "1.0.0",
  description: "Answers with its input.",
  input: { type: "object" },
  output: { type: "object" },
  handler: (input) => input,
});

defineTool({
  id: "echo.message",
  version: "1.0.0",
  description: "Answers with its input, a message.",
  input: {
    type: "object",
    properties: { message: { type: "string", minLength: 1, description: "What to say back." } },
    required: ["message"],
    additionalProperties: false,
  },
  output: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
  handler: (input: { message: string }) => ({ message: input.message }),
});
