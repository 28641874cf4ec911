package config

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"
)

// KeyError is a configuration error about one key: an unknown key, a value
// that does not parse or a value that breaks a rule. Key is the dotted key of
// section 8 (`projections.last_viewed.size`), an environment variable name
// (`PROJECTOR_FOO`) or a flag (`--config`, `--set`).
type KeyError struct {
	Key string
	Msg string
}

// Error returns one line: `config: <key>: <msg>`.
func (e *KeyError) Error() string {
	return "config: " + oneLine(e.Key) + ": " + oneLine(e.Msg)
}

// keyErr builds a *KeyError.
func keyErr(key, msg string) *KeyError { return &KeyError{Key: key, Msg: msg} }

// oneLine joins the trimmed non-empty lines of s with single spaces, so an
// error that wraps a multi-line message (YAML parse errors) stays one line.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// ExitCode maps an error from flag parsing or Load to a process exit code:
// 0 for nil and for pflag.ErrHelp (help was asked for), 2 for configuration
// errors (*KeyError and pflag's parse errors: unknown flag, missing or invalid
// value, bad syntax) and 1 for anything else.
func ExitCode(err error) int {
	if err == nil || errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	var (
		ke  *KeyError
		ne  *pflag.NotExistError
		vre *pflag.ValueRequiredError
		ive *pflag.InvalidValueError
		ise *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &ke), errors.As(err, &ne), errors.As(err, &vre),
		errors.As(err, &ive), errors.As(err, &ise):
		return 2
	}
	return 1
}
