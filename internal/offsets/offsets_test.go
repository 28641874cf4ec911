package offsets

import "testing"

// TestNames: the forms partitions and origins take in Redis.
func TestNames(t *testing.T) {
	if got := (TopicPartition{Topic: "views", Partition: 7}).String(); got != "views:7" {
		t.Errorf("TopicPartition.String = %q, want views:7", got)
	}
	for _, tp := range []TopicPartition{{"views", 7}, {"shop.views-2", 0}} {
		if got, err := ParseTopicPartition(tp.String()); err != nil || got != tp {
			t.Errorf("ParseTopicPartition(%q) = %v, %v; want %v", tp.String(), got, err, tp)
		}
	}
	for _, bad := range []string{"", "views", ":3", "views:", "views:x", "views:-1"} {
		if got, err := ParseTopicPartition(bad); err == nil {
			t.Errorf("ParseTopicPartition(%q) = %v, want an error", bad, got)
		}
	}
	if got := Origin("views", 7, 1234); got != "views:7:1234" {
		t.Errorf("Origin = %q, want views:7:1234", got)
	}
	if got := (Record{Topic: "a", Partition: 1}).TP(); got != (TopicPartition{Topic: "a", Partition: 1}) {
		t.Errorf("Record.TP = %v", got)
	}
}
