package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
)

// version is set by release builds (GoReleaser: -X main.version=…). Left empty, zkr
// reports the module version the go command recorded: vX.Y.Z for
// `go install …/cmd/zkr@vX.Y.Z`, "(devel)" for a build in the repository.
var version = ""

// cmdVersion prints zkr's version, its core library's version, and the Go that built it.
func cmdVersion(args []string) int {
	if len(args) > 0 {
		fmt.Fprintf(os.Stderr, "zkr: version takes no arguments\n")
		return exitUsage
	}
	v, lib := version, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/zkrecipes/zkrecipes" {
				lib = d.Version
				if d.Replace != nil {
					lib = d.Replace.Path
				}
			}
		}
	}
	if v == "" {
		v = "unknown"
	}
	fmt.Printf("zkr %s (zkrecipes %s, %s %s/%s)\n", v, lib, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
