package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSums_WorkingTreeMatchesTheTag: the go.sum lines modproxy computes from a working
// tree (what scripts/release.sh writes into go.sum before it commits and tags) are the
// ones of the zips made from the tags, as the go command and proxy.golang.org make them;
// a nested module without a LICENSE of its own included, which gets the top-level one.
func TestSums_WorkingTreeMatchesTheTag(t *testing.T) {
	repo := t.TempDir()
	t.Setenv("GIT_AUTHOR_NAME", "modproxy test")
	t.Setenv("GIT_AUTHOR_EMAIL", "modproxy-test@example.invalid")
	t.Setenv("GIT_COMMITTER_NAME", "modproxy test")
	t.Setenv("GIT_COMMITTER_EMAIL", "modproxy-test@example.invalid")
	files := map[string]string{
		"LICENSE":         "the license text\n",
		".gitignore":      "*.out\n",
		"go.mod":          "module example.com/top\n\ngo 1.22\n",
		"top.go":          "package top\n",
		"sub/go.mod":      "module example.com/top/sub\n\ngo 1.22\n",
		"sub/sub.go":      "package sub\n",
		"sub/ignored.out": "not in any zip\n",
	}
	for name, text := range files {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gitIn("init", "-q")
	t.Chdir(repo)

	const version = "v0.1.0"
	fromTree := filepath.Join(t.TempDir(), "tree.sum")
	if err := run(t.TempDir(), version, fromTree, false, []string{".", "sub"}); err != nil {
		t.Fatal(err)
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "the release")
	gitIn("tag", version)
	gitIn("tag", "sub/"+version)
	fromTags := filepath.Join(t.TempDir(), "tags.sum")
	if err := run(t.TempDir(), version, fromTags, true, []string{".", "sub"}); err != nil {
		t.Fatal(err)
	}

	tree, err := os.ReadFile(fromTree)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := os.ReadFile(fromTags)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(tags), "\n"); lines != 4 {
		t.Fatalf("the tags' go.sum lines: %d, want 4 (a zip and a go.mod line per module):\n%s", lines, tags)
	}
	if string(tree) != string(tags) {
		t.Errorf("go.sum lines from the working tree:\n%s\ndiffer from the tags':\n%s", tree, tags)
	}
}
