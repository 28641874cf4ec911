package corpus_test

import (
	"testing"

	"projector/internal/testing/corpus"
	"projector/pkg/events"
)

func TestCorpusAgreesWithDecoder(t *testing.T) {
	cases := corpus.Cases()
	if len(cases) < 100 {
		t.Fatalf("corpus has %d cases, want at least 100", len(cases))
	}
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.Name] {
			t.Errorf("case name %q used twice", c.Name)
		}
		names[c.Name] = true
	}
	// The depth cases are built with the decoder's limit.
	at := corpus.Rec("history_cleared", `"d":`+corpus.Nest(events.MaxDepth-1, "1"))
	if _, err := events.Decode([]byte(at)); err != nil {
		t.Errorf("nesting at the limit rejected: %v", err)
	}
	over := corpus.Rec("history_cleared", `"d":`+corpus.Nest(events.MaxDepth, "1"))
	if _, err := events.Decode([]byte(over)); err == nil {
		t.Errorf("nesting one past the limit accepted")
	}
}
