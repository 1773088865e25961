import { defineTool } from '@kindgi/sdk/define';
import type { ToolId } from '@kindgi/sdk/types';
import { z } from 'zod';

const defined = defineTool({
  id: 'acme-desk.encode' as ToolId,
  description: 'Encodes a note for the ticketing system: base64 and hex of its UTF-8, and its length in bytes.',
  version: '0.1.0',
  input: z.object({ note: z.string() }),
  output: z.object({ base64: z.string(), hex: z.string(), bytes: z.number().int(), roundTrip: z.boolean() }),
  effects: [],
  mutating: false,
  handler: async ({ note }) => {
    const buf = Buffer.from(note, 'utf8');
    const base64 = buf.toString('base64');
    return {
      base64,
      hex: buf.toString('hex'),
      bytes: Buffer.byteLength(note),
      roundTrip: Buffer.from(base64, 'base64').toString('utf8') === note,
    };
  },
});

if (defined.kind === 'err') throw new Error(defined.error.message);
export default defined.value;
