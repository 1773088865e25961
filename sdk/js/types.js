// @packd/sdk/types: kindgi's `@kindgi/sdk/types`, which holds types only
// (types.d.ts): branded ids and the result envelope.
export {};
