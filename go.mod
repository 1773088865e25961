module github.com/kindgi/packd

go 1.26

require github.com/tetratelabs/wazero v1.12.0

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/sys v0.44.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
