package instrument

import "testing"

func TestPrescanBoundsDeclaredCounts(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	cases := map[string]string{
		"100M imports in 8 bytes": head + "\x02\x06\xc7\xc7\xc7\x30\x00\x00",
		"4 GiB data segment":      head + "\x0b\x08\x01\x01\xff\xff\xff\xff\x0f\x00",
		"section past the end":    head + "\x01\x7f\x00",
		"too many locals":         head + "\x0a\x09\x01\x07\x01\xff\xff\xff\xff\x0f\x7f",
		"huge table":              head + "\x04\x07\x01\x70\x00\xff\xff\xff\x0f",
	}
	for name, bin := range cases {
		if err := Prescan([]byte(bin)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Prescan([]byte(head)); err != nil {
		t.Errorf("empty module: %v", err)
	}
}
