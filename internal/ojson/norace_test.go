//go:build !race

package ojson

const raceBuild = false
