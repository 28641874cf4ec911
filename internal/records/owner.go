package records

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// ProcessName names this process in shared bookkeeping: "<host>/<pid>".
func ProcessName() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", h, os.Getpid())
}

// UniqueName is ProcessName with a random suffix, so two consumers built in
// one process (tests) never share a dead-letter claim.
func UniqueName() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return ProcessName() + "/" + hex.EncodeToString(b)
}
