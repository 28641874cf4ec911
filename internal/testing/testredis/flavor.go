package testredis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/redis/go-redis/v9"
)

// Flavor names a server implementation the package can start.
type Flavor string

const (
	// Redis is Debian's redis-server (7.0), found on PATH. It is the default.
	Redis Flavor = "redis"
	// Valkey is valkey-server 8.1 from the test environment
	// (scripts/testenv/valkey.sh fetch) or $PROJECTOR_VALKEY_SERVER.
	Valkey Flavor = "valkey"
)

// Flavors returns every flavor, default first, for tests that run a matrix:
//
//	for _, f := range testredis.Flavors() {
//		t.Run(string(f), func(t *testing.T) { s := testredis.StartStandalone(t, testredis.WithFlavor(f)) ... })
//	}
func Flavors() []Flavor { return []Flavor{Redis, Valkey} }

// valkeyServerEnv overrides where valkey-server is found.
const valkeyServerEnv = "PROJECTOR_VALKEY_SERVER"

// testenvEnv overrides the test environment directory (as in
// scripts/testenv/*.sh).
const testenvEnv = "PROJECTOR_TESTENV_DIR"

// valkeyFetch is the command that puts valkey-server into the test
// environment.
const valkeyFetch = "scripts/testenv/valkey.sh fetch"

// binary returns the path of the flavor's server executable, or an error
// that says how to install it.
func (f Flavor) binary() (string, error) {
	switch f {
	case Redis:
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return "", fmt.Errorf("redis-server not found on PATH (install it, e.g. apt-get install redis-server): %w", err)
		}
		return bin, nil
	case Valkey:
		return valkeyBinary()
	default:
		return "", fmt.Errorf("unknown flavor %q (want one of %v)", string(f), Flavors())
	}
}

// valkeyBinary returns $PROJECTOR_VALKEY_SERVER, else
// <testenv>/valkey/bin/valkey-server, where testenv is $PROJECTOR_TESTENV_DIR
// or <module root>/.testenv, as scripts/testenv/valkey.sh places it.
func valkeyBinary() (string, error) {
	if p := os.Getenv(valkeyServerEnv); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", valkeyServerEnv, p, err)
		}
		return p, nil
	}
	env := os.Getenv(testenvEnv)
	if env == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", fmt.Errorf("locate the test environment: %w", err)
		}
		env = filepath.Join(root, ".testenv")
	}
	p := filepath.Join(env, "valkey", "bin", "valkey-server")
	if err := executable(p); err != nil {
		return "", fmt.Errorf("valkey-server missing (run %s, or set %s): %w", valkeyFetch, valkeyServerEnv, err)
	}
	return p, nil
}

// executable returns nil when p is a regular file with an execute bit.
func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// moduleRoot walks up from the working directory (a test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or above it", wd)
		}
		dir = parent
	}
}

// serverVersion reads INFO server and returns the flavor's own version:
// valkey_version for Valkey (which reports a compatible redis_version too),
// redis_version for Redis. It fails when the server is not that flavor.
func serverVersion(ctx context.Context, c *redis.Client, f Flavor) (string, error) {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("INFO server: %w", err)
	}
	fields := parseInfo(info)
	valkey, isValkey := fields["valkey_version"]
	switch {
	case f == Valkey && isValkey:
		return valkey, nil
	case f == Redis && !isValkey && fields["redis_version"] != "":
		return fields["redis_version"], nil
	case isValkey:
		return "", fmt.Errorf("want %s, the server is valkey %s", f, valkey)
	default:
		return "", fmt.Errorf("want %s, INFO server has no redis_version or valkey_version", f)
	}
}
