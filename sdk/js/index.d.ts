// Types of @packd/sdk (index.js).

/** A JSON Schema object (draft 2020-12). */
export type JsonSchema = Readonly<Record<string, unknown>>;

/** What a zod 4 schema looks like to the SDK. */
export interface ZodLikeSchema {
  readonly _zod: { readonly input: unknown; readonly output: unknown };
  toJSONSchema?(params?: { io?: "input" | "output" }): Record<string, unknown>;
  safeParse(value: unknown): { success: true; data: unknown } | { success: false; error: unknown };
}

/** A schema: JSON Schema, or zod. */
export type AnySchema = JsonSchema | ZodLikeSchema;

/** What a caller may send for a schema (zod's input side). */
export type InferInput<T> = T extends { readonly _zod: { readonly input: infer I } } ? I : unknown;
/** What a handler gets or returns for a schema (zod's output side). */
export type InferOutput<T> = T extends { readonly _zod: { readonly output: infer O } } ? O : unknown;

/** A logger bound to the call: one JSON line per record, on stdout (debug, info) or stderr. */
export interface CallLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** The protocol's callContext, as the caller sent it, and what the SDK adds. */
export interface ToolContext {
  readonly tenantId: string;
  readonly runId: string;
  readonly principal?: string;
  readonly requestId?: string;
  readonly idempotencyKey?: string;
  readonly projectId?: string;
  readonly orgId?: string;
  readonly env?: Readonly<Record<string, string>>;
  readonly secrets?: Readonly<Record<string, string>>;
  readonly settings?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly config?: Readonly<Record<string, unknown>>;
  /** Never fires: packd stops a cancelled call itself. */
  readonly abortSignal: AbortSignal;
  readonly log?: CallLogger;
}

/**
 * A credential packd writes into every request to its host itself: the
 * call's `ctx.secrets[secret]`, or the process variable `env` the index
 * declares, in `header` (default Authorization) after `scheme` and a space.
 * Pack code never holds it (docs/index-format.md, "network").
 */
export type Credential =
  | { readonly secret: string; readonly header?: string; readonly scheme?: string }
  | { readonly env: string; readonly header?: string; readonly scheme?: string };

/** Per host: bound credentials, and the header of writes' idempotency keys (false: none). */
export interface NetworkHostSettings {
  readonly credentials?: Readonly<Record<string, Credential>>;
  readonly idempotency?: Readonly<Record<string, false | { readonly header: string }>>;
}

/** A tool's network policy, as in the index. */
export type NetworkPolicy =
  | { readonly kind: "none" }
  | ({ readonly kind: "allowlist"; readonly hosts: readonly string[] } & NetworkHostSettings)
  | ({ readonly kind: "unrestricted" } & NetworkHostSettings);

/** A tool's limits, as in the index. */
export interface Limits {
  readonly fuel?: number;
  readonly cpuMs?: number;
  readonly memMB?: number;
  readonly instance?: "fresh" | "pooled";
  readonly [key: string]: unknown;
}

export type Result<T, E> = { readonly kind: "ok"; readonly value: T } | { readonly kind: "err"; readonly error: E };

export interface ToolError {
  readonly code: "invalid-tool-definition" | "invalid-schema";
  readonly message: string;
}

export interface DefineToolSpec<TIn extends AnySchema | undefined, TOut extends AnySchema | undefined, THandlerIn, THandlerOut> {
  readonly id: string;
  readonly version: string;
  readonly description?: string;
  readonly input?: TIn;
  readonly output?: TOut;
  readonly limits?: Limits;
  readonly network?: NetworkPolicy;
  readonly handler: (input: THandlerIn, ctx: ToolContext) => THandlerOut | Promise<THandlerOut>;
}

export interface Tool<THandlerIn = unknown, THandlerOut = unknown> {
  readonly id: string;
  readonly version: string;
  readonly description?: string;
  /** The input's JSON Schema (converted when it was zod). */
  readonly input?: JsonSchema;
  readonly output?: JsonSchema;
  readonly limits?: Limits;
  readonly network?: NetworkPolicy;
  readonly handler: (input: THandlerIn, ctx: ToolContext) => THandlerOut | Promise<THandlerOut>;
  readonly inputZod?: ZodLikeSchema;
  readonly outputZod?: ZodLikeSchema;
}

export function defineTool<
  const TIn extends AnySchema | undefined,
  const TOut extends AnySchema | undefined,
  THandlerIn = InferOutput<TIn>,
  THandlerOut = InferOutput<TOut>,
>(spec: DefineToolSpec<TIn, TOut, THandlerIn, THandlerOut>): Result<Tool<THandlerIn, THandlerOut>, ToolError>;

/** What a check answers: a boolean `passed`, and anything else of its own. */
export interface CheckResult {
  readonly passed: boolean;
  readonly reason?: string;
  readonly [key: string]: unknown;
}

export interface DefineCheckSpec<TConfig extends AnySchema | undefined> {
  readonly id: string;
  /** The index's guardrail id, when it is not the check's id. */
  readonly guardrail?: string;
  readonly kind?: "zero-llm" | "llm-judge" | "external";
  readonly action?: Readonly<Record<string, unknown>>;
  readonly severity?: string;
  readonly configSchema?: TConfig;
  /** The same as configSchema. */
  readonly config?: TConfig;
  readonly limits?: Limits;
  readonly network?: NetworkPolicy;
  readonly evaluate: (
    config: TConfig extends ZodLikeSchema ? InferOutput<TConfig> : Readonly<Record<string, unknown>>,
    trace: unknown,
    bindings: Readonly<Record<string, unknown>>,
  ) => CheckResult | Promise<CheckResult>;
}

export interface Check {
  readonly id: string;
  readonly guardrail?: string;
  readonly kind?: string;
  readonly action?: Readonly<Record<string, unknown>>;
  readonly severity?: string;
  readonly configSchema?: JsonSchema;
  readonly evaluate: (config: unknown, trace: unknown, bindings?: Readonly<Record<string, unknown>>) => Promise<CheckResult> | CheckResult;
  readonly configZod?: ZodLikeSchema;
}

export function defineCheck<const TConfig extends AnySchema | undefined = undefined>(spec: DefineCheckSpec<TConfig>): Check;

export function declareEnv(names: { readonly required?: readonly string[]; readonly optional?: readonly string[] }): void;

export function testContext(overrides?: Partial<ToolContext>): ToolContext;

export function isZodSchema(schema: unknown): schema is ZodLikeSchema;

export function toJSONSchema(schema: AnySchema | undefined, io?: "input" | "output"): JsonSchema | undefined;

export const inPackd: boolean;
