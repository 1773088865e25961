package pysdk

import "embed"

// SDK is packd_sdk, the module a pack imports (the runtime has it frozen
// in), for `packd init --lang py` to copy beside a new pack, where the
// pack's tests import it on the author's own Python.
//
//go:embed packd_sdk/__init__.py
var SDK embed.FS
