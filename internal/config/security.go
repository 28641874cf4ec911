package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// TLSConfig holds the `<section>.tls.` keys of a client connection.
type TLSConfig struct {
	Enabled            bool   `mapstructure:"enabled"`
	CAFile             string `mapstructure:"ca_file"`   // PEM CA bundle; empty: the system roots
	CertFile           string `mapstructure:"cert_file"` // PEM client certificate (mutual TLS), with key_file
	KeyFile            string `mapstructure:"key_file"`
	ServerName         string `mapstructure:"server_name"` // expected server name; empty: the host of the address
	InsecureSkipVerify bool   `mapstructure:"insecure_skip_verify"`

	// Client is the TLS client configuration built from the keys when
	// enabled is true, else nil (derived by Load, not a key).
	Client *tls.Config `mapstructure:"-"`
}

// SASLConfig holds the `kafka.sasl.` keys.
type SASLConfig struct {
	Mechanism    string `mapstructure:"mechanism"` // empty (none), plain, scram-sha-256 or scram-sha-512
	Username     string `mapstructure:"username"`
	Password     string `mapstructure:"password"`
	PasswordFile string `mapstructure:"password_file"`
}

// SASL mechanisms accepted in kafka.sasl.mechanism.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// checkSecurity validates the credentials and TLS keys of Redis and Kafka,
// reads the password files into the passwords and builds the TLS client
// configurations. Errors name the key and never quote a secret.
func checkSecurity(c *Config) error {
	r := &c.Redis
	if r.Username != "" && r.Password == "" && r.PasswordFile == "" {
		return keyErr("redis.password", "must be set (or redis.password_file) when redis.username is set")
	}
	pw, err := resolvePassword("redis", r.Password, r.PasswordFile)
	if err != nil {
		return err
	}
	r.Password = pw
	if err := checkSentinelAuth(&r.Sentinel); err != nil {
		return err
	}
	if err := r.TLS.build("redis.tls"); err != nil {
		return err
	}
	k := &c.Kafka
	if err := checkSASL(&k.SASL); err != nil {
		return err
	}
	return k.TLS.build("kafka.tls")
}

// checkSentinelAuth checks the Sentinels' credentials and reads their
// password file (checkSentinel refused them outside sentinel mode).
func checkSentinelAuth(s *SentinelConfig) error {
	if s.Username != "" && s.Password == "" && s.PasswordFile == "" {
		return keyErr("redis.sentinel.password", "must be set (or redis.sentinel.password_file) when redis.sentinel.username is set")
	}
	pw, err := resolvePassword("redis.sentinel", s.Password, s.PasswordFile)
	if err != nil {
		return err
	}
	s.Password = pw
	return nil
}

func checkSASL(s *SASLConfig) error {
	switch s.Mechanism {
	case "":
		if s.Username != "" || s.Password != "" || s.PasswordFile != "" {
			return keyErr("kafka.sasl.mechanism", "must be plain, scram-sha-256 or scram-sha-512 when kafka.sasl.username or a password is set")
		}
		return nil
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
	default:
		return keyErr("kafka.sasl.mechanism", fmt.Sprintf("must be empty, plain, scram-sha-256 or scram-sha-512 (got %q)", s.Mechanism))
	}
	if s.Username == "" {
		return keyErr("kafka.sasl.username", "must be set when kafka.sasl.mechanism is set")
	}
	pw, err := resolvePassword("kafka.sasl", s.Password, s.PasswordFile)
	if err != nil {
		return err
	}
	if pw == "" {
		return keyErr("kafka.sasl.password", "must be set (or kafka.sasl.password_file) when kafka.sasl.mechanism is set")
	}
	s.Password = pw
	return nil
}

// resolvePassword returns the password of section: the value of
// <section>.password, or the content of <section>.password_file without its
// trailing line break. Setting both is an error.
func resolvePassword(section, password, file string) (string, error) {
	if file == "" {
		return password, nil
	}
	if password != "" {
		return "", keyErr(section+".password_file", "must not be set together with "+section+".password (choose one)")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", keyErr(section+".password_file", fmt.Sprintf("cannot read %s: %v", file, unwrapPath(err)))
	}
	pw := strings.TrimRight(string(data), "\r\n")
	if pw == "" {
		return "", keyErr(section+".password_file", fmt.Sprintf("%s is empty", file))
	}
	return pw, nil
}

// unwrapPath drops the path from an *os.PathError (the message names it).
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// build checks the TLS keys under prefix and sets t.Client.
func (t *TLSConfig) build(prefix string) error {
	t.Client = nil
	if !t.Enabled {
		for key, v := range map[string]string{"ca_file": t.CAFile, "cert_file": t.CertFile, "key_file": t.KeyFile, "server_name": t.ServerName} {
			if v != "" {
				return keyErr(prefix+"."+key, "is set but "+prefix+".enabled is false")
			}
		}
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return keyErr(prefix+".ca_file", fmt.Sprintf("cannot read %s: %v", t.CAFile, unwrapPath(err)))
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return keyErr(prefix+".ca_file", fmt.Sprintf("%s holds no PEM certificate", t.CAFile))
		}
		cfg.RootCAs = pool
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return keyErr(prefix+".cert_file", "cert_file and key_file must be set together (client certificate and its key)")
	}
	if t.CertFile != "" {
		for key, file := range map[string]string{"cert_file": t.CertFile, "key_file": t.KeyFile} {
			if _, err := os.Stat(file); err != nil {
				return keyErr(prefix+"."+key, fmt.Sprintf("cannot read %s: %v", file, unwrapPath(err)))
			}
		}
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return keyErr(prefix+".cert_file", fmt.Sprintf("cannot load the key pair %s / %s: %v", t.CertFile, t.KeyFile, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	t.Client = cfg
	return nil
}

// TLSSetupError reports whether err, from a connection made with a TLS
// client configuration built here, is a handshake failure that retrying
// cannot fix: an unknown authority, a wrong server name, an invalid or
// missing certificate, or a TLS client talking to a plaintext port.
func TLSSetupError(err error) bool {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		verify    *tls.CertificateVerificationError
		header    tls.RecordHeaderError
	)
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &header) || strings.Contains(err.Error(), "tls: ")
}
