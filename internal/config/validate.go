package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time_zone must load on hosts without a zoneinfo database

	"projector/pkg/projections"
)

// validate checks every rule of section 8 and the combinations of section 7,
// and loads Location. The first failure is returned as a *KeyError.
func validate(c *Config, s schema) error {
	for _, f := range s.fields {
		if f.kind != kindDuration {
			continue
		}
		if d := f.get(c).(time.Duration); d <= 0 {
			return keyErr(f.key, fmt.Sprintf("must be greater than zero (got %s)", d))
		}
	}
	checks := []func(*Config) error{
		checkKafka,
		checkRedis,
		checkSecurity,
		checkTimeZone,
		checkBatchHTTPLog,
		checkProjections,
	}
	for _, check := range checks {
		if err := check(c); err != nil {
			return err
		}
	}
	return nil
}

func checkKafka(c *Config) error {
	k := c.Kafka
	if err := checkAddrs(keyBrokers, k.Brokers); err != nil {
		return err
	}
	if strings.TrimSpace(k.GroupID) == "" {
		return keyErr("kafka.group_id", "must not be empty")
	}
	if len(k.Topics) == 0 {
		return keyErr("kafka.topics", "must name at least one topic")
	}
	for i, t := range k.Topics {
		if t == "" {
			return keyErr("kafka.topics", fmt.Sprintf("must not contain an empty topic name (got %q)", k.Topics))
		}
		if msg := topicProblem(t); msg != "" {
			return keyErr("kafka.topics", msg)
		}
		if slices.Contains(k.Topics[:i], t) {
			return keyErr("kafka.topics", fmt.Sprintf("duplicate topic %q", t))
		}
	}
	if k.DLQTopic == "" {
		return keyErr("kafka.dlq_topic", "must not be empty: poison records are never dropped")
	}
	if msg := topicProblem(k.DLQTopic); msg != "" {
		return keyErr("kafka.dlq_topic", msg)
	}
	if slices.Contains(k.Topics, k.DLQTopic) {
		return keyErr("kafka.dlq_topic", fmt.Sprintf("%q is also an input topic in kafka.topics", k.DLQTopic))
	}
	if k.MaxRecordBytes < 1 {
		return keyErr("kafka.max_record_bytes", fmt.Sprintf("must be at least 1 (got %d)", k.MaxRecordBytes))
	}
	return nil
}

// topicProblem describes why a non-empty name is not a legal Kafka topic
// name, or returns "".
func topicProblem(name string) string {
	switch {
	case name == "." || name == "..":
		return fmt.Sprintf("topic name %q is not allowed", name)
	case len(name) > 249:
		return fmt.Sprintf("topic name %q is longer than 249 characters", name)
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "":
		return fmt.Sprintf("topic name %q may only hold letters, digits, '.', '_' and '-'", name)
	}
	return ""
}

// checkAddrs checks a list of host:port addresses.
func checkAddrs(key string, addrs []string) error {
	for _, a := range addrs {
		if a == "" {
			return keyErr(key, fmt.Sprintf("must not contain an empty address (got %q)", addrs))
		}
		if msg := hostPortProblem(a, false); msg != "" {
			return keyErr(key, msg)
		}
	}
	return nil
}

// hostPortProblem describes why a is not host:port with a numeric port, or
// returns "". The host may be empty (all interfaces, or localhost).
func hostPortProblem(a string, allowPortZero bool) string {
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Sprintf("address %q must be host:port", a)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || (n == 0 && !allowPortZero) {
		return fmt.Sprintf("address %q has an invalid port", a)
	}
	return ""
}

func checkRedis(c *Config) error {
	r := c.Redis
	switch r.Mode {
	case ModeStandalone, ModeCluster, ModeSentinel:
	default:
		return keyErr("redis.mode", fmt.Sprintf("must be standalone, cluster or sentinel (got %q)", r.Mode))
	}
	if r.Mode != ModeStandalone && c.Embedded {
		return keyErr("redis.mode", r.Mode+" needs redis.addrs (embedded mode runs one in-process Redis)")
	}
	if err := checkAddrs(keyRedisAddrs, r.Addrs); err != nil {
		return err
	}
	if r.Mode == ModeStandalone && len(r.Addrs) > 1 {
		return keyErr(keyRedisAddrs, fmt.Sprintf("standalone mode takes one address (got %d); set redis.mode to cluster for a Redis Cluster, or to sentinel for Sentinels", len(r.Addrs)))
	}
	if err := checkSentinel(r); err != nil {
		return err
	}
	switch r.ReadFrom {
	case ReadFromMaster:
	case ReadFromReplicas:
		if r.Mode == ModeStandalone {
			return keyErr("redis.read_from", "replicas needs redis.mode sentinel or cluster (a standalone address names one server)")
		}
	default:
		return keyErr("redis.read_from", fmt.Sprintf("must be master or replicas (got %q)", r.ReadFrom))
	}
	if r.Wait.Replicas < 0 {
		return keyErr("redis.wait.replicas", fmt.Sprintf("must be 0 (no wait) or more (got %d)", r.Wait.Replicas))
	}
	if strings.ContainsAny(r.KeyPrefix, "{}") {
		return keyErr("redis.key_prefix", fmt.Sprintf("must not contain { or } (got %q): the prefix stays outside the hash tag", r.KeyPrefix))
	}
	return nil
}

// checkSentinel checks the redis.sentinel keys: the master name is
// required in sentinel mode, and no key of the section may be set in the
// other modes. Their passwords are resolved by checkSecurity.
func checkSentinel(r RedisConfig) error {
	s := r.Sentinel
	if r.Mode != ModeSentinel {
		for key, v := range map[string]string{"master_name": s.MasterName, "username": s.Username, "password": s.Password, "password_file": s.PasswordFile} {
			if v != "" {
				return keyErr("redis.sentinel."+key, "is set but redis.mode is "+r.Mode+", not sentinel")
			}
		}
		return nil
	}
	switch {
	case s.MasterName == "":
		return keyErr("redis.sentinel.master_name", "must be set when redis.mode is sentinel (the name the Sentinels of redis.addrs monitor)")
	case strings.IndexFunc(s.MasterName, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return keyErr("redis.sentinel.master_name", fmt.Sprintf("must not contain spaces or control characters (got %q)", s.MasterName))
	}
	return nil
}

func checkTimeZone(c *Config) error {
	switch c.TimeZone {
	case "":
		return keyErr("time_zone", "must be an IANA time zone name such as UTC or Europe/Berlin")
	case "Local":
		return keyErr("time_zone", `must be an IANA time zone name, not "Local" (bucketing must not depend on the machine)`)
	}
	loc, err := time.LoadLocation(c.TimeZone)
	if err != nil {
		return keyErr("time_zone", fmt.Sprintf("unknown time zone %q", c.TimeZone))
	}
	c.Location = loc
	return nil
}

func checkBatchHTTPLog(c *Config) error {
	if c.Batch.MaxEvents < 1 {
		return keyErr("batch.max_events", fmt.Sprintf("must be at least 1 (got %d)", c.Batch.MaxEvents))
	}
	if msg := hostPortProblem(c.HTTP.Addr, true); msg != "" {
		return keyErr("http.addr", msg)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return keyErr("log.level", fmt.Sprintf("must be debug, info, warn or error (got %q)", c.Log.Level))
	}
	switch c.Log.Format {
	case "auto", "json", "console":
	default:
		return keyErr("log.format", fmt.Sprintf("must be auto, json or console (got %q)", c.Log.Format))
	}
	return nil
}

// checkProjections runs every projection's own checks (its Spec's), which
// also normalise its section.
func checkProjections(c *Config) error {
	for _, s := range projections.All() {
		if fe := s.Check(&c.Projections); fe != nil {
			return keyErr("projections."+s.Name+"."+fe.Field, fe.Problem)
		}
	}
	return nil
}
