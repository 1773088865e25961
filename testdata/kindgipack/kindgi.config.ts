// The pack's id, version and folders, as kindgi reads them. packd build-ts
// finds the same definitions under tools/ and guardrails/.
export default {
  pack: { id: 'acme-desk', version: '0.1.0' },
  discovery: { tools: 'tools/**/index.ts', guardrails: 'guardrails/**/index.ts' },
};
