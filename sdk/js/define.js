// @packd/sdk/define: kindgi's `@kindgi/sdk/define` authoring surface
// over packd's SDK (index.js), by kindgi's names, so a kindgi pack's
// imports need only their package name changed (or none, with the
// package installed as @kindgi/sdk: docs/typescript.md).
export {
  EFFECT_KINDS,
  ToolPreconditionError,
  defineCheck,
  defineGuardrail,
  defineTool,
  defineToolAsync,
  invokeTool,
  isZodSchema,
  registerModules,
  toJSONSchema,
  toolContextForTest,
} from "./index.js";
