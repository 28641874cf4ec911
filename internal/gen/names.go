package gen

import (
	"fmt"
	"strings"
)

// specialUsers are valid user ids (printable ASCII, no space, '{', '}' or ':')
// with characters that trip careless code: glob metacharacters (SCAN MATCH),
// JSON escapes, and the maximum length of 64 bytes. None contains '<', '>'
// or '&', whose JSON escaping differs between encoders.
func specialUsers() []string {
	return []string{
		"u*star",
		"u?q",
		"u[br]",
		`u\bs`,
		`u"q`,
		"u.dot-1_x",
		"u@at|pipe",
		"u#h%25",
		"U" + strings.Repeat("x", 63),
	}
}

// userNames returns n user ids: u1..un with the special ids spread among them.
func userNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("u%d", i+1)
	}
	special := specialUsers()
	next := 0
	for i := 2; i < n && next < len(special); i += 7 {
		names[i] = special[next]
		next++
	}
	return names
}

// productNames returns n product ids: p1..pn, where every 50th id is
// "p<k>@b" for an existing product p<k> (so a history member of "p<k>@b"
// starts with "p<k>@") and one id has the maximum length of 64 bytes.
func productNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i+1)
	}
	for i := 7; i < n; i += 50 {
		names[i] = names[i-1] + "@b"
	}
	if n > 20 {
		names[20] = "P" + strings.Repeat("y", 63)
	}
	return names
}

// devices and stores are the optional view dimensions.
func devices() []string { return []string{"web", "ios", "android"} }
func stores() []string  { return []string{"s1", "s2", "s3"} }
