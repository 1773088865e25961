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
  /** kindgi's secret resolver: packd never sets it (it binds credentials itself: Credential). */
  readonly resolveSecret?: (ref: ToolSecretRef) => Promise<string>;
  /** kindgi's durable decision: packd never sets it (replay tapes what a call reads). */
  readonly record?: <T>(key: string, decide: () => T | Promise<T>) => Promise<T>;
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
  readonly code: "invalid-tool-definition" | "invalid-schema" | "unknown-effect";
  readonly message: string;
}

/** The effect kinds a tool may declare. */
export declare const EFFECT_KINDS: readonly ["reads", "writes", "deletes", "network", "spawns-run", "emits-event", "external-side-effect", "sensitive-data-egress"];
export type EffectKind = (typeof EFFECT_KINDS)[number];

/** A side effect the tool declares (data for policy and audit; the index's `effects`). */
export interface Effect {
  readonly kind: EffectKind;
  readonly resource?: string;
  readonly notes?: string;
}

/** A named context slot the tool expects (data). */
export interface Need {
  readonly name: string;
  readonly optional?: boolean;
}

/**
 * What a tool needs of its call: `env` and `secrets` name what the
 * caller resolves into `ctx.env` and `ctx.secrets`, each with a schema
 * (JSON Schema or zod) of its string value; an env name whose schema has
 * a `default` is optional. The handler's ctx.env holds the declared names
 * only.
 */
export interface TypedNeeds {
  readonly env?: Readonly<Record<string, AnySchema>>;
  readonly secrets?: Readonly<Record<string, AnySchema>>;
  readonly config?: Readonly<Record<string, AnySchema>>;
  readonly capabilities?: readonly string[];
  readonly bindings?: readonly string[];
}

/** kindgi's pointer to a secret; packd binds `name`, a key of the call's ctx.secrets. */
export interface ToolSecretRef {
  readonly envName: string;
  readonly name: string;
}

export type HttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
export interface HttpHeaderSpec {
  readonly name: string;
  readonly value: string;
}
export type HttpAuthSpec =
  | { readonly kind: "bearer"; readonly secretRef: ToolSecretRef }
  | { readonly kind: "header"; readonly headerName: string; readonly secretRef: ToolSecretRef };
export type HttpRequestBodySpec = { readonly kind: "json-input" } | { readonly kind: "input-passthrough" } | { readonly kind: "text"; readonly template: string };

/**
 * A declarative HTTP tool: packd makes the request from the input
 * (`{param}` in urlTemplate and header values), under the tool's network
 * policy (the template's host is allowed), and writes the authorization
 * itself (a bound credential: the pack never holds the secret).
 */
export interface HttpToolSpec {
  readonly kind: "http";
  readonly method: HttpMethod;
  readonly urlTemplate: string;
  readonly headers?: readonly HttpHeaderSpec[];
  readonly authorization?: HttpAuthSpec;
  readonly requestBody?: HttpRequestBodySpec;
  readonly timeoutMs?: number;
  readonly parseJson?: boolean;
  readonly successStatus?: { readonly min: number; readonly max: number };
}
export type ToolSpec = HttpToolSpec;

/** What a tool declares besides its schemas and code: the index entry's data. */
export interface ToolManifestData {
  readonly id: string;
  readonly version: string;
  readonly description?: string;
  readonly limits?: Limits;
  readonly network?: NetworkPolicy;
  readonly effects?: readonly Effect[];
  /** false: the tool only reads (packd refuses its writes); absent counts as mutating. */
  readonly mutating?: boolean;
  readonly needs?: readonly Need[];
  readonly needsSpec?: TypedNeeds;
  readonly sandbox?: "none" | "context-isolated" | "strict";
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly spec?: ToolSpec;
}

/** The manifest as the index carries it: the schemas in JSON Schema. */
export interface ToolManifest extends ToolManifestData {
  readonly input?: JsonSchema;
  readonly output?: JsonSchema;
}

export interface DefineToolSpec<TIn extends AnySchema | undefined, TOut extends AnySchema | undefined, THandlerIn, THandlerOut>
  extends ToolManifestData {
  readonly input?: TIn;
  readonly output?: TOut;
  /** The code; omit it for a declarative `spec`. */
  readonly handler?: (input: THandlerIn, ctx: ToolContext) => THandlerOut | Promise<THandlerOut>;
}

export interface Tool<THandlerIn = unknown, THandlerOut = unknown> extends ToolManifest {
  readonly handler: (input: THandlerIn, ctx: ToolContext) => THandlerOut | Promise<THandlerOut>;
  readonly inputZod?: ZodLikeSchema | undefined;
  readonly outputZod?: ZodLikeSchema | undefined;
}

/** The tool defineTool answers, with the zod schemas it was given. */
export type DefinedTool<TIn extends AnySchema | undefined, TOut extends AnySchema | undefined, THandlerIn = InferOutput<TIn>, THandlerOut = InferOutput<TOut>> = Tool<
  THandlerIn,
  THandlerOut
> &
  (TIn extends ZodLikeSchema ? { readonly inputZod: TIn } : { readonly inputZod?: undefined }) &
  (TOut extends ZodLikeSchema ? { readonly outputZod: TOut } : { readonly outputZod?: undefined });

export function defineTool<
  const TIn extends AnySchema | undefined,
  const TOut extends AnySchema | undefined,
  THandlerIn = InferOutput<TIn>,
  THandlerOut = InferOutput<TOut>,
>(spec: DefineToolSpec<TIn, TOut, THandlerIn, THandlerOut>): Result<DefinedTool<TIn, TOut, THandlerIn, THandlerOut>, ToolError>;

export function defineToolAsync<
  const TIn extends AnySchema | undefined,
  const TOut extends AnySchema | undefined,
  THandlerIn = InferOutput<TIn>,
  THandlerOut = InferOutput<TOut>,
>(spec: DefineToolSpec<TIn, TOut, THandlerIn, THandlerOut>): Promise<Result<DefinedTool<TIn, TOut, THandlerIn, THandlerOut>, ToolError>>;

/** Why invokeTool answered no value: kindgi's codes. */
export type InvokeError =
  | { readonly code: "input-validation-failed"; readonly message: string; readonly toolId: string; readonly errors: readonly unknown[] }
  | { readonly code: "output-validation-failed"; readonly message: string; readonly toolId: string; readonly errors: readonly unknown[] }
  | { readonly code: "handler-error"; readonly message: string; readonly toolId: string; readonly cause: unknown }
  | { readonly code: "precondition-failed"; readonly message: string; readonly toolId: string; readonly reason: string; readonly cause: unknown };

export interface InvokeToolOptions {
  readonly skipOutputValidation?: boolean;
}

/**
 * Runs a tool as its runtime does, in a pack's tests under Node (node
 * --test, vitest): the declared env, the input validated (Ajv, its
 * defaults filled in) and parsed by its zod schema, the handler, the
 * output validated. Never throws for what the tool does.
 */
export function invokeTool<TInput = unknown, TOutput = unknown>(
  tool: Tool<TInput, TOutput>,
  input: unknown,
  ctx: ToolContext,
  options?: InvokeToolOptions,
): Promise<Result<TOutput, InvokeError>>;

/** A call that was not run, and why (a handler may throw one). */
export declare class ToolPreconditionError extends Error {
  constructor(reason: string, message: string);
  readonly reason: string;
}

/** kindgi's test context: tenant `tenant-test`, run `run-test`, and the overrides. */
export function toolContextForTest(overrides?: Partial<ToolContext>): ToolContext;

/** What a check answers: a boolean `passed`, and anything else of its own. */
export interface CheckResult {
  readonly passed: boolean;
  readonly reason?: string;
  readonly [key: string]: unknown;
}

/** The run trace a check reads (kindgi's RunTrace); members packd's caller may leave out are optional. */
export interface RunTrace {
  readonly runId: string;
  readonly tenantId: string;
  readonly projectId?: string;
  readonly orgId?: string;
  readonly agentId?: string;
  readonly flowId?: string;
  /** The final answer's text. */
  readonly output?: string;
  readonly toolCalls: readonly { readonly toolId: string; readonly toolName: string; readonly arguments: Readonly<Record<string, unknown>>; readonly at: string }[];
  readonly toolResults: readonly { readonly toolCallId: string; readonly output: unknown; readonly at: string }[];
  readonly modelCalls: readonly { readonly providerId: string; readonly model: string; readonly promptTokens: number; readonly completionTokens: number; readonly at: string }[];
  readonly userInput?: string;
  readonly retrievedFactIds?: readonly string[];
  readonly conversationId?: string;
  readonly turnNumber?: number;
  readonly totalCostUsd?: number;
  readonly durationMs?: number;
  readonly mode: "ci" | "runtime";
  readonly attributes?: Readonly<Record<string, unknown>>;
}

/** What the caller's engine passes beside the trace (none under packd). */
export type EvaluationBindings = Readonly<Record<string, unknown>>;

/** A check's config as evaluate gets it: zod's output, or an object. */
export type InferCheckConfig<T> = T extends { readonly _zod: { readonly output: infer O } } ? O : Readonly<Record<string, unknown>>;

export interface DefineCheckSpec<TConfig extends AnySchema | undefined = AnySchema | undefined> {
  readonly id: string;
  /** zero-llm (default), llm-judge, external. */
  readonly kind?: string;
  /** The index's guardrail id, when it is not the check's id. */
  readonly guardrail?: string;
  readonly action?: Readonly<Record<string, unknown>>;
  readonly severity?: string;
  readonly configSchema?: TConfig;
  /** The same as configSchema. */
  readonly config?: TConfig;
  readonly limits?: Limits;
  readonly network?: NetworkPolicy;
  /** Run after the schema's check: a message when the config does not fit, else undefined. */
  readonly validateConfig?: (config: unknown) => string | undefined;
  readonly evaluate: (config: InferCheckConfig<TConfig>, trace: RunTrace, bindings: EvaluationBindings) => CheckResult | Promise<CheckResult>;
}

export interface DefinedCheck<TConfig extends AnySchema | undefined = AnySchema | undefined> {
  readonly id: string;
  readonly guardrail?: string;
  readonly kind?: string;
  readonly action?: Readonly<Record<string, unknown>>;
  readonly severity?: string;
  readonly configSchema?: JsonSchema;
  readonly configJsonSchema?: JsonSchema;
  readonly evaluate: (config: unknown, trace: RunTrace, bindings?: EvaluationBindings) => Promise<CheckResult>;
  readonly validateConfig?: (config: unknown) => string | undefined;
  readonly configZod: TConfig extends ZodLikeSchema ? TConfig : undefined;
}
/** The same as DefinedCheck. */
export type Check = DefinedCheck;

export function defineCheck<const TConfig extends AnySchema | undefined = undefined>(spec: DefineCheckSpec<TConfig>): DefinedCheck<TConfig>;

/** What a violation does: kindgi's Action. */
export interface GuardrailAction {
  readonly "on-violation": string;
  readonly retry?: { readonly maxAttempts: number };
  readonly escalateTo?: string;
  readonly compensateWith?: string;
}

/** kindgi's guardrail: a check bound to its config, and what a violation does. */
export interface Guardrail {
  readonly id: string;
  readonly name?: string;
  readonly description?: string;
  readonly kind: string;
  readonly check: string;
  readonly config?: Readonly<Record<string, unknown>>;
  readonly action: GuardrailAction;
  readonly severity?: "info" | "warn" | "error" | "critical";
  readonly scope?: {
    readonly when?: "always" | "ci-only" | "runtime-only";
    readonly agents?: readonly string[];
    readonly flows?: readonly string[];
    readonly tenants?: readonly string[];
  };
  readonly sandbox?: "none" | "context-isolated" | "strict";
  readonly [key: string]: unknown;
}

export function defineGuardrail<const G extends Guardrail>(guardrail: G): G;

/** Registers the guardrail objects modules default-export (packd build-ts's entry calls it). */
export function registerModules(modules: readonly { readonly default?: unknown }[]): void;

export function declareEnv(names: { readonly required?: readonly string[]; readonly optional?: readonly string[] }): void;

export function testContext(overrides?: Partial<ToolContext>): ToolContext;

export function isZodSchema(schema: unknown): schema is ZodLikeSchema;

export function toJSONSchema(schema: AnySchema | undefined, io?: "input" | "output"): JsonSchema | undefined;

export const inPackd: boolean;
