// Command modproxy writes modules of this repository into a directory laid out as a Go
// module proxy (the GOPROXY protocol: <module>/@v/list, <version>.info, .mod and .zip),
// which the go command reads with GOPROXY=file://DIR. The release script uses it to
// compute go.sum lines for modules that are not published yet, and the release test to
// serve a tagged clone as a user's go get would meet it.
//
//	modproxy -out DIR -version vX.Y.Z [-tagged] [-sums FILE] MODDIR...
//
// Each MODDIR is a module's directory relative to the git top level of the current
// directory, "." for the root module. With -tagged, each module's zip is made from its
// git tag (vX.Y.Z for the root module, MODDIR/vX.Y.Z for the others) by git archive, as
// proxy.golang.org makes it; without, from the files git tracks or would track (not
// ignored) in the working tree, as they are on disk. Either way a nested module without
// a LICENSE of its own gets the repository's, as the go command gives it one. -sums
// appends each module's go.sum lines (the hashes of its zip and of its go.mod) to FILE.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy directory to write (created if missing)")
	version := flag.String("version", "", "the version to publish every module at (vX.Y.Z)")
	tagged := flag.Bool("tagged", false, "make each zip from the module's git tag, not the working tree")
	sums := flag.String("sums", "", "a file to append each module's go.sum lines to")
	flag.Parse()
	if err := run(*out, *version, *sums, *tagged, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(out, version, sums string, tagged bool, dirs []string) error {
	if out == "" || len(dirs) == 0 {
		return errors.New("usage: modproxy -out DIR -version vX.Y.Z [-tagged] [-sums FILE] MODDIR (one or more)")
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("-version %q is not a canonical semantic version (vX.Y.Z)", version)
	}
	top, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	repo := strings.TrimSpace(string(top))
	for _, d := range dirs {
		lines, err := publish(out, version, repo, filepath.ToSlash(filepath.Clean(d)), tagged)
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if sums != "" {
			if err := appendFile(sums, lines); err != nil {
				return err
			}
		}
	}
	return nil
}

// publish writes one module's .info, .mod and .zip at version, adds version to its list and
// returns the module's go.sum lines.
func publish(out, version, repo, dir string, tagged bool) (string, error) {
	subdir := dir
	if dir == "." {
		subdir = ""
	}
	rev, modPath := "", path.Join(subdir, "go.mod")
	var gomod []byte
	var err error
	if tagged {
		rev = path.Join(subdir, version)
		gomod, err = git(repo, "show", rev+":"+modPath)
	} else {
		gomod, err = os.ReadFile(filepath.Join(repo, filepath.FromSlash(modPath)))
	}
	if err != nil {
		return "", err
	}
	mpath := modfile.ModulePath(gomod)
	if mpath == "" {
		return "", fmt.Errorf("%s names no module", modPath)
	}
	m := module.Version{Path: mpath, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return "", err
	}
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}

	var z bytes.Buffer
	t := time.Now().UTC()
	if tagged {
		if err := zip.CreateFromVCS(&z, m, repo, rev, subdir); err != nil {
			return "", err
		}
		if ct, err := git(repo, "log", "-1", "--format=%cI", rev); err == nil {
			if pt, err := time.Parse(time.RFC3339, strings.TrimSpace(string(ct))); err == nil {
				t = pt.UTC()
			}
		}
	} else {
		files, err := treeFiles(repo, subdir)
		if err != nil {
			return "", err
		}
		if err := zip.Create(&z, m, files); err != nil {
			return "", err
		}
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t})
	if err != nil {
		return "", err
	}
	base := filepath.Join(vdir, version)
	for ext, data := range map[string][]byte{".mod": gomod, ".info": info, ".zip": z.Bytes()} {
		if err := os.WriteFile(base+ext, data, 0o644); err != nil {
			return "", err
		}
	}
	if err := addToList(filepath.Join(vdir, "list"), version); err != nil {
		return "", err
	}
	zipSum, err := dirhash.HashZip(base+".zip", dirhash.DefaultHash)
	if err != nil {
		return "", err
	}
	modSum, err := dirhash.DefaultHash([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", m.Path, version, zipSum, m.Path, version, modSum), nil
}

func appendFile(file, text string) error {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func addToList(file, version string) error {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(data))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(file, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// treeFiles lists the files under subdir that git tracks or would track (not ignored),
// as they are on disk, with paths relative to subdir. zip.Create leaves out the files of
// nested modules. A nested module (subdir not "") without a LICENSE gets the
// repository's top-level one, as zip.CreateFromVCS and the go command give it.
func treeFiles(repo, subdir string) ([]zip.File, error) {
	files, err := listed(repo, subdir)
	if err != nil || subdir == "" || slices.ContainsFunc(files, func(f diskFile) bool { return f.rel == "LICENSE" }) {
		return zipFiles(files), err
	}
	license, err := listed(repo, "LICENSE")
	license = slices.DeleteFunc(license, func(f diskFile) bool { return f.full != filepath.Join(repo, "LICENSE") })
	return zipFiles(append(files, license...)), err
}

// listed lists the files at or under p (a path from the top, "" for all) that git
// tracks or would track (not ignored), as they are on disk, with paths relative to
// p's directory.
func listed(repo, p string) ([]diskFile, error) {
	args := []string{"ls-files", "-z", "--cached", "--others", "--exclude-standard"}
	if p != "" {
		args = append(args, "--", p)
	}
	out, err := git(repo, args...)
	if err != nil {
		return nil, err
	}
	var files []diskFile
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" || seen[f] {
			continue
		}
		seen[f] = true
		full := filepath.Join(repo, filepath.FromSlash(f))
		info, err := os.Lstat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		rel := f
		if p != "" && f != p {
			rel = strings.TrimPrefix(f, p+"/")
		}
		files = append(files, diskFile{rel: rel, full: full, info: info})
	}
	return files, nil
}

func zipFiles(files []diskFile) []zip.File {
	zf := make([]zip.File, len(files))
	for i, f := range files {
		zf[i] = f
	}
	return zf
}

type diskFile struct {
	rel, full string
	info      fs.FileInfo
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
