package zkrecipes

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// validatePath checks a recipe path (or a namespace in its absolute form)
// against ZooKeeper's rules and this package's own: absolute, no trailing
// slash, no empty, "." or ".." segment, no control or reserved characters,
// and not the root or the reserved /zookeeper tree.
func validatePath(p string) error {
	bad := func(reason string) error { return &PathError{Path: p, Reason: reason} }
	switch {
	case p == "":
		return bad("empty")
	case p[0] != '/':
		return bad("must be absolute (start with /)")
	case p == "/":
		return bad("the root cannot hold a recipe")
	case p[len(p)-1] == '/':
		return bad("trailing slash")
	case !utf8.ValidString(p):
		return bad("not valid UTF-8")
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return bad("empty segment (//)")
		case ".", "..":
			return bad("relative segment " + seg)
		}
	}
	for _, r := range p {
		if refusedInName(r) {
			return bad(fmt.Sprintf("ZooKeeper refuses %U in a path", r))
		}
	}
	if p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/") {
		return bad("reserved /zookeeper tree")
	}
	return nil
}

// refusedInName tells whether ZooKeeper refuses r in a path. Its rule is
// on UTF-16 code units: control characters, the private-use area and
// U+FFF0-U+FFFF, and a surrogate, so also any character past U+FFFF, which
// Java's strings hold as a surrogate pair.
func refusedInName(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0xd800 && r <= 0xf8ff) || r >= 0xfff0
}

// normalizeNamespace accepts "app", "app/prod" or "/app/prod" and returns
// the absolute form, or "" for no namespace.
func normalizeNamespace(ns string) (string, error) {
	if ns == "" {
		return "", nil
	}
	abs := ns
	if abs[0] != '/' {
		abs = "/" + abs
	}
	if err := validatePath(abs); err != nil {
		return "", &PathError{Path: ns, Reason: "namespace: " + err.(*PathError).Reason}
	}
	return abs, nil
}

// joinPath joins a parent and a child name.
func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}

// parentPath returns the parent of an absolute path ("/" for a top-level node).
func parentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// baseName returns the last segment of a path.
func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
