package config

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"30d", 720 * time.Hour, false},
		{"1d", 24 * time.Hour, false},
		{"0d", 0, false},
		{"90s", 90 * time.Second, false},
		{"2h", 2 * time.Hour, false},
		{"1h30m", 90 * time.Minute, false},
		{"-1h", -time.Hour, false},
		{"1.5d", 0, true},
		{"-1d", 0, true},
		{"+1d", 0, true},
		{"d", 0, true},
		{"1d2h", 0, true},
		{"30D", 0, true},
		{"abc", 0, true},
		{"", 0, true},
		{"10", 0, true},
		{"999999999999d", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("ParseDuration(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestDurationKeys(t *testing.T) {
	const key = "projections.history.retention"
	tests := []struct {
		value   string
		want    time.Duration
		wantErr bool
	}{
		{"30d", 720 * time.Hour, false},
		{"36h", 36 * time.Hour, false},
		{"1.5d", 0, true},
		{"-1h", 0, true},
		{"0s", 0, true},
		{"abc", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			// The same value through the file, the environment and --set.
			sources := []struct {
				name string
				file string
				env  []string
				args []string
			}{
				{"file", "projections:\n  history:\n    retention: \"" + tt.value + "\"\n", nil, nil},
				{"env", "", []string{envName(key) + "=" + tt.value}, nil},
				{"set", "", nil, []string{"--set", key + "=" + tt.value}},
			}
			for _, src := range sources {
				c, err := loadWith(t, src.file, src.env, src.args...)
				if tt.wantErr {
					assertKeyError(t, err, key)
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", src.name, err)
				}
				if c.Projections.History.Retention != tt.want {
					t.Fatalf("%s: retention = %v, want %v", src.name, c.Projections.History.Retention, tt.want)
				}
			}
		})
	}
}

func TestDecodeIntYAMLTypes(t *testing.T) {
	tests := []struct {
		raw     any
		want    int
		wantErr bool
	}{
		{7, 7, false},
		{int64(8), 8, false},
		{uint64(9), 9, false},
		{" 10 ", 10, false},
		{uint64(1 << 63), 0, true},
		{1.0, 0, true},
		{true, 0, true},
		{nil, 0, true},
	}
	f := field{key: "k", kind: kindInt}
	for _, tt := range tests {
		got, err := decode(f, tt.raw)
		if (err != nil) != tt.wantErr {
			t.Fatalf("decode(%#v) error = %v, wantErr %v", tt.raw, err, tt.wantErr)
		}
		if err == nil && got.(int) != tt.want {
			t.Fatalf("decode(%#v) = %v, want %d", tt.raw, got, tt.want)
		}
	}
}
