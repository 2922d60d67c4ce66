package zkrecipes

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidatePathRejectsWhatZooKeeperOrARecipeCannotUse(t *testing.T) {
	bad := map[string]string{
		"":                "empty",
		"locks/a":         "relative",
		"/":               "root",
		"/locks/":         "trailing slash",
		"/locks//a":       "empty segment",
		"/locks/./a":      "dot segment",
		"/locks/../a":     "dot-dot segment",
		"/a\x00b":         "NUL",
		"/a\nb":           "newline",
		"/a\u0085b":       "C1 control",
		"/a\ufff5b":       "reserved character",
		"/a\ue000b":       "private-use character",
		"/a\U0001F600b":   "past U+FFFF (a surrogate pair in Java)",
		"/zookeeper":      "reserved tree",
		"/zookeeper/quot": "inside reserved tree",
		"/a\xffb":         "invalid UTF-8",
	}
	for p, why := range bad {
		err := validatePath(p)
		require.Errorf(t, err, "%s: %q accepted", why, p)
		assert.ErrorIs(t, err, ErrInvalidPath, why)
		var pe *PathError
		require.True(t, errors.As(err, &pe), why)
		assert.Equal(t, p, pe.Path)
		assert.True(t, strings.HasPrefix(err.Error(), "zkrecipes: "), err.Error())
	}
}

func TestValidatePathAcceptsOrdinaryPaths(t *testing.T) {
	for _, p := range []string{"/a", "/locks/job-1", "/zookeeperish", "/a/b/c.d", "/ünïcode/ok", "/.hidden"} {
		assert.NoError(t, validatePath(p), p)
	}
}

func TestNamespaceAcceptsBothFormsAndRejectsBadOnes(t *testing.T) {
	for in, want := range map[string]string{"": "", "app": "/app", "/app": "/app", "app/prod": "/app/prod"} {
		got, err := normalizeNamespace(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"app/", "/", "a//b", "zookeeper", "../x"} {
		_, err := normalizeNamespace(in)
		assert.ErrorIs(t, err, ErrInvalidPath, in)
	}
}

func TestPathHelpers(t *testing.T) {
	assert.Equal(t, "/a/b", joinPath("/a", "b"))
	assert.Equal(t, "/b", joinPath("/", "b"))
	assert.Equal(t, "/a", parentPath("/a/b"))
	assert.Equal(t, "/", parentPath("/a"))
	assert.Equal(t, "b", baseName("/a/b"))
}

func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/a", "", "/a//b", "/zookeeper/x", "/a/../b", "/\x00", "/a/b/", "/ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := validatePath(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		// What is accepted is absolute, has no empty or relative segment
		// and no trailing slash: ZooKeeper will accept it too.
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//") ||
			strings.Contains(p+"/", "/./") || strings.Contains(p+"/", "/../") || strings.ContainsRune(p, 0) {
			t.Fatalf("accepted bad path %q", p)
		}
	})
}
