package replay

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"projector/internal/apply"
	"projector/internal/config"
)

// rebuildDLQMarks reads the dead-letter topic and records, per source
// partition, the highest offset already dead-lettered (px:dlq:{g}), so a
// batch that consumers retry after the handover is not dead-lettered again.
func rebuildDLQMarks(ctx context.Context, cfg config.Config, marks *apply.DLQMarks) (int, error) {
	client := &kafka.Client{Addr: kafka.TCP(cfg.Kafka.Brokers...), Timeout: 10 * time.Second}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{cfg.Kafka.DLQTopic}})
	if err != nil {
		return 0, fmt.Errorf("read metadata of %s: %w", cfg.Kafka.DLQTopic, err)
	}
	req := map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil { // no dead-letter topic yet: nothing was dead-lettered
			return 0, nil
		}
		for _, p := range t.Partitions {
			req[t.Name] = append(req[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return 0, fmt.Errorf("list offsets of %s: %w", cfg.Kafka.DLQTopic, err)
	}
	highest := map[string]int64{}
	n := 0
	for topic, ps := range offs.Topics {
		for _, p := range ps {
			if p.Error != nil || p.LastOffset <= p.FirstOffset {
				continue
			}
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Kafka.Brokers, Topic: topic, Partition: p.Partition,
				MaxBytes: max(10<<20, 2*cfg.Kafka.MaxRecordBytes+(1<<20)), MaxWait: 250 * time.Millisecond})
			if err := r.SetOffset(p.FirstOffset); err != nil {
				r.Close()
				return n, fmt.Errorf("seek %s/%d: %w", topic, p.Partition, err)
			}
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					r.Close()
					return n, fmt.Errorf("read %s/%d: %w", topic, p.Partition, err)
				}
				n++
				var src, part, off string
				for _, h := range m.Headers {
					switch h.Key {
					case "source-topic":
						src = string(h.Value)
					case "source-partition":
						part = string(h.Value)
					case "source-offset":
						off = string(h.Value)
					}
				}
				if o, err := strconv.ParseInt(off, 10, 64); err == nil && src != "" {
					f := src + ":" + part
					highest[f] = max(highest[f], o)
				}
				if m.Offset >= p.LastOffset-1 {
					break
				}
			}
			r.Close()
		}
	}
	if len(highest) == 0 {
		return n, nil
	}
	return n, marks.Mark(ctx, highest)
}
