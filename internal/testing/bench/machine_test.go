package bench

import (
	"runtime"
	"testing"
	"time"
)

// TestMachineReadings: the idle time grows and the busy cores lie between
// 0 and the CPUs while this test keeps one CPU spinning; the process's CPU
// time grows by about the spin.
func TestMachineReadings(t *testing.T) {
	idle0, err := idleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	self0, start := selfCPUSeconds(), time.Now()
	for time.Since(start) < 300*time.Millisecond {
	}
	wall := time.Since(start)
	idle1, err := idleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	if idle1 < idle0 {
		t.Errorf("idle went back: %v -> %v", idle0, idle1)
	}
	if busy := busyCores(idle0, idle1, wall, runtime.NumCPU()); busy < 0.5 || busy > float64(runtime.NumCPU())+0.1 {
		t.Errorf("busy cores %.2f while one CPU spun, on %d CPUs", busy, runtime.NumCPU())
	}
	if used := selfCPUSeconds() - self0; used < 0.2 || used > 1 {
		t.Errorf("the process used %.2f s of CPU in a 0.3 s spin", used)
	}
}
