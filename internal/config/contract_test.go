package config

import (
	"os"
	"strings"
	"testing"
)

const contractFile = "../../docs/contract.md"

// contractKeys returns the keys of the rows of docs/contract.md section 8
// ("| `key` | default | accepted |").
func contractKeys(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(contractFile)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## 8. ")
	if !ok {
		t.Fatal("docs/contract.md has no section 8")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	keys := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if key, ok := strings.CutPrefix(line, "| `"); ok {
			if end := strings.Index(key, "` |"); end > 0 {
				keys[key[:end]] = true
			}
		}
	}
	return keys
}

// TestContractNamesEveryKey: section 8 of docs/contract.md has a row of its
// own for every key the loader accepts and for no other, so a key added to
// Config without documenting it, or a documented key that does not exist,
// fails here.
func TestContractNamesEveryKey(t *testing.T) {
	documented := contractKeys(t)
	for _, f := range newSchema().fields {
		if !documented[f.key] {
			t.Errorf("%s has no row of its own in docs/contract.md section 8 (\"| `%s` | default | accepted |\")", f.key, f.key)
		}
		delete(documented, f.key)
	}
	for key := range documented {
		t.Errorf("docs/contract.md section 8 documents %s, which is no configuration key", key)
	}
}
