import { defineTool } from '@kindgi/sdk/define';
import type { ToolId } from '@kindgi/sdk/types';

// A declarative tool: the runtime makes the request; the token is the
// tenant's secret ISSUES_TOKEN.
const defined = defineTool({
  id: 'acme-desk.create-issue' as ToolId,
  description: 'Files an issue in the tracker and answers its number.',
  version: '0.1.0',
  input: {
    type: 'object',
    properties: { port: { type: 'integer' }, project: { type: 'string' }, title: { type: 'string', minLength: 1 } },
    required: ['port', 'project', 'title'],
    additionalProperties: false,
  },
  output: {
    type: 'object',
    properties: { number: { type: 'integer' }, title: { type: 'string' } },
    required: ['number'],
  },
  effects: [{ kind: 'writes', resource: 'external:tracker' }],
  spec: {
    kind: 'http',
    method: 'POST',
    urlTemplate: 'http://127.0.0.1:{port}/projects/{project}/issues',
    authorization: { kind: 'bearer', secretRef: { envName: 'local', name: 'ISSUES_TOKEN' } },
    requestBody: { kind: 'json-input' },
  },
});

if (defined.kind === 'err') throw new Error(defined.error.message);
export default defined.value;
