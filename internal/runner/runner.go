package runner

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed python/*.py python/codecell/*.py
var files embed.FS

// RelaySource is codecell/_relay.py, for a sandbox without the runner (an
// installer's command) to run with python -c.
var RelaySource = func() string {
	b, err := files.ReadFile("python/codecell/_relay.py")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// Script is the runner's file name inside the installed directory.
const Script = "codecell_runner.py"

// GenDir is the empty directory of an install where a sandbox mounts the
// generated servers package.
const GenDir = "gen"

// SkillsDir is the empty directory of an install where a sandbox mounts the
// namespace's saved skills.
const SkillsDir = "skills"

// Install writes the embedded Python files into a directory under root named
// by their content hash, and returns that directory. An existing complete
// copy is reused, so concurrent servers and restarts share one. Files are
// written to a temporary directory first and renamed into place, so a reader
// never sees a partial install.
func Install(root string) (string, error) {
	sum, err := contentHash()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, sum[:16])
	if _, err := os.Stat(filepath.Join(dir, Script)); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("install runner: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".install-")
	if err != nil {
		return "", fmt.Errorf("install runner: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(files, "python", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("python", path)
		target := filepath.Join(tmp, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	for _, mountPoint := range []string{GenDir, SkillsDir} {
		if err == nil {
			// The mount points of the generated servers package and of
			// the skills: the install is mounted read-only, so a sandbox
			// could not create them.
			err = os.Mkdir(filepath.Join(tmp, mountPoint), 0o755)
		}
	}
	if err == nil {
		// The sandbox user is not the owner: everything must be world-readable.
		err = os.Chmod(tmp, 0o755)
	}
	if err != nil {
		return "", fmt.Errorf("install runner: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, Script)); statErr == nil {
			return dir, nil // another process won the race
		}
		return "", fmt.Errorf("install runner: %w", err)
	}
	return dir, nil
}

func contentHash() (string, error) {
	h := sha256.New()
	// The layout is part of the content: an install made before a mount
	// point was added must not be reused.
	fmt.Fprintf(h, "mount points\x00%s\x00%s\x00", GenDir, SkillsDir)
	all, err := Files()
	for _, f := range all {
		fmt.Fprintf(h, "%s\x00%d\x00", f.Path, len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// ReadFile returns one of the embedded Python files by its path in the
// installed directory ("codecell/__init__.py").
func ReadFile(name string) ([]byte, error) {
	return files.ReadFile("python/" + name)
}

// File is one of the runner's files: its path relative to the install's
// directory, and its content.
type File struct {
	Path string
	Data []byte
}

// Files returns the runner's files, in the layout Install writes (without
// its empty mount-point directories, GenDir and SkillsDir), for a sandbox
// that is given copies rather than a bind of the install: a bind shows the
// install's host path in the sandbox's mount table.
func Files() ([]File, error) {
	var out []File
	err := fs.WalkDir(files, "python", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("python", path)
		out = append(out, File{Path: rel, Data: data})
		return nil
	})
	return out, err
}
