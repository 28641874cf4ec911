package events

import (
	"encoding/json"
	"testing"
)

func BenchmarkDecode(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"view", typicalView},
		{"order", typicalOrder},
	} {
		data := []byte(bc.in)
		if _, err := Decode(data); err != nil {
			b.Fatalf("Decode(%s): %v", bc.name, err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStdlibUnmarshal is the reference: encoding/json into a plain
// struct, without any of Decode's checks.
func BenchmarkStdlibUnmarshal(b *testing.B) {
	type rec struct {
		ID        string `json:"id"`
		Type      string `json:"type"`
		TS        int64  `json:"ts"`
		UserID    string `json:"user_id"`
		ProductID string `json:"product_id"`
		Device    string `json:"device"`
		StoreID   string `json:"store_id"`
		Items     []Item `json:"items"`
	}
	for _, bc := range []struct{ name, in string }{
		{"view", typicalView},
		{"order", typicalOrder},
	} {
		data := []byte(bc.in)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var r rec
				if err := json.Unmarshal(data, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	ev, err := Decode([]byte(typicalOrder))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}
