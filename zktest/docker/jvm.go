package docker

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
)

// dockerJVM gives a container the JVM flags zktest.WithJVMFlags asked for (nil: none). An image
// whose entrypoint runs java itself (ours, integration/docker/build-image.sh)
// gets them on its command line, in place of its own -X flags (its -D
// properties and class path stay); any other image (the official one, whose
// zkServer.sh reads JVMFLAGS) gets them in JVMFLAGS. It returns the entrypoint
// to run (nil: the image's own) and the JVMFLAGS value.
func (b *dockerBackend) dockerJVM(ctx context.Context, flags []string) (entrypoint []string, jvmflags string, err error) {
	jvmflags = "-Xmx256m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true"
	if flags == nil {
		return nil, jvmflags, nil
	}
	img, err := b.cli.ImageInspect(ctx, b.image)
	if err != nil {
		return nil, "", fmt.Errorf("zktest/docker: image %s: %w", b.image, err)
	}
	jvmflags = strings.Join(append(slices.Clone(flags), "-Djava.net.preferIPv4Stack=true"), " ")
	if img.Config == nil || len(img.Config.Entrypoint) == 0 || path.Base(img.Config.Entrypoint[0]) != "java" {
		return nil, jvmflags, nil
	}
	return withJVMFlags(img.Config.Entrypoint, flags), jvmflags, nil
}

// withJVMFlags returns the java command line entry with its -X options
// replaced by flags.
func withJVMFlags(entry, flags []string) []string {
	out := append([]string{entry[0]}, flags...)
	for i, a := range entry[1:] {
		if a == "-cp" || a == "-classpath" || !strings.HasPrefix(a, "-") {
			return append(out, entry[1+i:]...) // the class path and main class on
		}
		if !strings.HasPrefix(a, "-X") {
			out = append(out, a)
		}
	}
	return out
}
