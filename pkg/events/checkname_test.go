package events

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"u1", "user-42", strings.Repeat("x", 64), "a@b.c"} {
		if err := CheckName("user", ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "a b", "a:b", "a{b", "a}b", strings.Repeat("x", 65), "é"} {
		err := CheckName("user", bad)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "user" {
			t.Errorf("CheckName(%q) = %v, want a *ValidationError about user", bad, err)
		}
	}
}
