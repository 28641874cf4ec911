package bench

import (
	"runtime"
	"testing"
	"time"
)

// TestMachineReadings: the idle time never goes back; while this test keeps
// one CPU spinning until the process used 0.3 s of CPU (at most 10 s: a
// loaded machine gives the spin less than its wall time), the process's CPU
// time grows by about the spin, and the busy cores lie between what the spin
// alone kept busy and the CPUs.
func TestMachineReadings(t *testing.T) {
	idle0, err := idleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	self0, start := selfCPUSeconds(), time.Now()
	for selfCPUSeconds()-self0 < 0.3 && time.Since(start) < 10*time.Second {
		for range 1_000_000 {
		}
	}
	wall := time.Since(start)
	used := selfCPUSeconds() - self0
	idle1, err := idleSeconds()
	if err != nil {
		t.Fatal(err)
	}
	if idle1 < idle0 {
		t.Errorf("idle went back: %v -> %v", idle0, idle1)
	}
	if used < 0.3 || used > 1.5*wall.Seconds()+0.1 {
		t.Errorf("the process used %.2f s of CPU in a %v spin", used, wall.Round(time.Millisecond))
	}
	spin := used / wall.Seconds() // cores the spin kept busy
	if busy := busyCores(idle0, idle1, wall, runtime.NumCPU()); busy < 0.8*spin-0.1 || busy > float64(runtime.NumCPU())+0.1 {
		t.Errorf("busy cores %.2f while the spin kept %.2f busy, on %d CPUs", busy, spin, runtime.NumCPU())
	}
}
