module github.com/kindgi/packd/abi/guest

go 1.24
