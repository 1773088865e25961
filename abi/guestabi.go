package abi

// The guest ABI, version 1. GUEST-ABI.md is the normative text.
const (
	// GuestABIVersion is what a module's kindgi_abi_version export returns.
	GuestABIVersion = 1

	// ImportModule is the module name of the host functions a guest imports.
	ImportModule = "kindgi"

	ImportRequestLen    = "request_len"    // () -> i32
	ImportRequestRead   = "request_read"   // (ptr i32)
	ImportResponseWrite = "response_write" // (ptr i32, len i32)
	ImportLog           = "log"            // (level i32, ptr i32, len i32)

	ExportABIVersion = "kindgi_abi_version" // () -> i32
	ExportDescribe   = "kindgi_describe"    // () -> i32
	ExportCall       = "kindgi_call"        // () -> i32
	ExportInitialize = "_initialize"        // optional reactor initialiser
	ExportMemory     = "memory"
)

// Status is what kindgi_call and kindgi_describe return.
type Status int32

const (
	// StatusOK: the response is the tool output, the check result, or (for
	// kindgi_describe) the description.
	StatusOK Status = 0
	// StatusThrown: the handler threw; the response is `{name, message, stack}`.
	StatusThrown Status = 1
	// StatusNoHandler: the module has no handler for the requested id.
	StatusNoHandler Status = 2
)

// Log levels of the log import.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)

// Wildcard in a description's tool list means the module serves any tool id.
const Wildcard = "*"

// Request kinds the guest reads from request_read.
const (
	KindInvoke      = "invoke"
	KindCheckInvoke = "check-invoke"
)
