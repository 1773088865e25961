// What stands for invoke-node.js inside packd (package.json's "#invoke"
// without the node condition): invokeTool and the schema validators run
// in a pack's tests under Node, where Ajv is; inside packd, packd
// validates every call against the index itself, and a pack's code has
// no use for them.

const outside = (what) => () => {
  throw new Error(`${what} runs in a pack's tests under Node (node --test, vitest), not inside packd: packd validates every call itself`);
};

export const invokeTool = outside("invokeTool");
export const validatorFor = outside("a schema validator");
export const firstIssue = outside("a schema validator");
