// Package version tells which build of projector runs: the module version
// and the VCS revision Go records in the binary (runtime/debug.ReadBuildInfo).
// A build without VCS stamping (go build -buildvcs=false, or outside a
// checkout) has no revision: it is "unknown" then.
package version

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
)

// Usage is the help text of every command's --version flag.
const Usage = "print the module version and VCS revision, then exit"

// Unknown stands for what the build did not record.
const Unknown = "unknown"

// String is the line a command prints for --version, e.g.
// "consumer: projector (devel), revision 3f2c1e9ab0d4 (2026-12-07T09:12:44Z, modified), go1.26.8".
func String(command string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return Of(command, info)
}

// Of is String for the build information info (nil when there is none).
func Of(command string, info *debug.BuildInfo) string {
	module, ver, goVer := "projector", Unknown, Unknown
	rev, at, modified := Unknown, "", false
	if info != nil {
		if info.Main.Path != "" {
			module = info.Main.Path
		}
		if info.Main.Version != "" {
			ver = info.Main.Version
		}
		if info.GoVersion != "" {
			goVer = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var notes []string
	if at != "" {
		notes = append(notes, at)
	}
	if modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		rev += " (" + strings.Join(notes, ", ") + ")"
	}
	return fmt.Sprintf("%s: %s %s, revision %s, %s", command, module, ver, rev, goVer)
}

// Asked reports whether args ask for the version (--version, or
// --version=true), before "--". Commands look at it before they parse the
// rest, so that the version is printed whatever else is wrong.
func Asked(args []string) bool {
	end := len(args)
	if i := slices.Index(args, "--"); i >= 0 {
		end = i
	}
	for _, a := range args[:end] {
		if a == "--version" || a == "--version=true" {
			return true
		}
	}
	return false
}
