// Package testtls makes a throw-away certificate authority for tests: a CA,
// a server certificate for 127.0.0.1 and localhost and a client
// certificate, written as PEM files into the test's temporary directory, for
// servers started with TLS (redis-server --tls-port, Kafka SSL listeners with
// ssl.keystore.type=PEM) and the clients that connect to them.
package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Files are the PEM files of one test CA.
type Files struct {
	// Dir holds every file below.
	Dir string
	// CA is the CA certificate (the trust anchor for clients and servers).
	CA string
	// ServerCert and ServerKey are the server's certificate (DNS localhost,
	// IP 127.0.0.1, server and client auth) and its PKCS#8 key.
	ServerCert, ServerKey string
	// ServerKeystore holds the server's key followed by its certificate, the
	// layout of a Kafka keystore with ssl.keystore.type=PEM.
	ServerKeystore string
	// ClientCert and ClientKey are a client certificate (CN "projector")
	// and its PKCS#8 key.
	ClientCert, ClientKey string
}

// issued is a certificate with its key.
type issued struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

// New creates a CA with a server and a client certificate, valid for one
// day, in a new temporary directory of tb. Failure fails tb.
func New(tb testing.TB) Files {
	tb.Helper()
	dir := tb.TempDir()
	f := Files{
		Dir: dir, CA: filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ServerKeystore: filepath.Join(dir, "server-keystore.pem"),
		ClientCert:     filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	ca := issue(tb, &x509.Certificate{Subject: pkix.Name{CommonName: "projector test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}, nil)
	server := issue(tb, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}, &ca)
	client := issue(tb, &x509.Certificate{Subject: pkix.Name{CommonName: "projector"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, &ca)
	writeCert(tb, f.CA, ca)
	writeCert(tb, f.ServerCert, server)
	writeKey(tb, f.ServerKey, server)
	keystore := append(readFile(tb, f.ServerKey), readFile(tb, f.ServerCert)...)
	if err := os.WriteFile(f.ServerKeystore, keystore, 0o600); err != nil {
		tb.Fatalf("testtls: write %s: %v", f.ServerKeystore, err)
	}
	writeCert(tb, f.ClientCert, client)
	writeKey(tb, f.ClientKey, client)
	return f
}

// issue signs tmpl with parent (self-signed when parent is nil).
func issue(tb testing.TB, tmpl *x509.Certificate, parent *issued) issued {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("testtls: generate key: %v", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		tb.Fatalf("testtls: serial: %v", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.BasicConstraintsValid = true
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		tb.Fatalf("testtls: create certificate %q: %v", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatalf("testtls: parse certificate: %v", err)
	}
	return issued{cert: cert, der: der, key: key}
}

func writeCert(tb testing.TB, path string, c issued) {
	tb.Helper()
	writePEM(tb, path, "CERTIFICATE", c.der)
}

func writeKey(tb testing.TB, path string, c issued) {
	tb.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		tb.Fatalf("testtls: marshal key: %v", err)
	}
	writePEM(tb, path, "PRIVATE KEY", der)
}

func writePEM(tb testing.TB, path, typ string, der []byte) {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("testtls: write %s: %v", path, err)
	}
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("testtls: read %s: %v", path, err)
	}
	return b
}
