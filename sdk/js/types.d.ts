// Types of @packd/sdk/types: kindgi's @kindgi/sdk/types, branded ids
// (nominal strings: construct one with `as`) and the result envelope.
export type Brand<T, B extends string> = T & { readonly __brand: B };
export type { Result } from "./index.js";

export type AgentId = Brand<string, "AgentId">;
export type ArtifactId = Brand<string, "ArtifactId">;
export type EventId = Brand<string, "EventId">;
export type FlowId = Brand<string, "FlowId">;
export type GuardrailId = Brand<string, "GuardrailId">;
export type NodeId = Brand<string, "NodeId">;
export type OrgId = Brand<string, "OrgId">;
export type PackId = Brand<string, "PackId">;
export type ProjectId = Brand<string, "ProjectId">;
export type RunId = Brand<string, "RunId">;
export type SessionId = Brand<string, "SessionId">;
export type TeamId = Brand<string, "TeamId">;
export type TenantId = Brand<string, "TenantId">;
export type ThreadId = Brand<string, "ThreadId">;
export type ToolId = Brand<string, "ToolId">;
export type UserId = Brand<string, "UserId">;
export type Semver = string;
export type Timestamp = string;
