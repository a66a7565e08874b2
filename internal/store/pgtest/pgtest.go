// Package pgtest runs a throwaway PostgreSQL server for tests: Debian's
// binaries (package postgresql, under /usr/lib/postgresql/<version>/bin),
// initdb in a temporary directory, the server listening only on a unix
// socket in that directory, no fsync (a test's database need not survive
// the machine). Run as root, the server runs as the postgres user (or
// nobody), since PostgreSQL refuses to run as root.
//
// It is a test helper, imported by tests only.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/codecell/codecell/internal/proc"
)

// ErrNoPostgres says the PostgreSQL server binaries are not installed.
var ErrNoPostgres = errors.New("PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql; make test installs it)")

// Server is one running PostgreSQL server.
type Server struct {
	root string // temporary directory: data/, the socket, server.log
	cmd  *exec.Cmd
	done chan struct{} // closed when the server process has exited

	mu  sync.Mutex // guards seq
	seq int        // databases created, for their names
}

// BinDir returns the directory of the newest installed PostgreSQL's
// binaries, or ErrNoPostgres.
func BinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	var ok []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				ok = append(ok, d)
			}
		}
	}
	if len(ok) == 0 {
		return "", ErrNoPostgres
	}
	version := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	sort.Slice(ok, func(i, j int) bool { return version(ok[i]) < version(ok[j]) })
	return ok[len(ok)-1], nil
}

// Start initializes a cluster in a new temporary directory and starts a
// server on it, returning once it accepts connections (bounded by ctx).
// Stop it with Stop.
func Start(ctx context.Context) (*Server, error) {
	if testing.Short() {
		return nil, fmt.Errorf("%w: -short (make check) runs no PostgreSQL; make test does", ErrNoPostgres)
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	// Short: the socket's path must fit in 107 bytes.
	root, err := os.MkdirTemp("", "cc-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{root: root, done: make(chan struct{})}
	cred, err := runAs(root)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	data := filepath.Join(root, "data")
	initdb := proc.Command(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr.Credential = cred
	initdb.Dir = root
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	logf, err := os.Create(filepath.Join(root, "server.log"))
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	defer logf.Close()
	s.cmd = proc.Command(context.Background(), filepath.Join(bin, "postgres"), "-D", data, "-k", root,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB",
		"-c", "dynamic_shared_memory_type=mmap")
	s.cmd.Dir = root
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed outright takes the server with it
	// (SIGQUIT: immediate shutdown; the backends notice their postmaster
	// is gone and exit), rather than proc.Command's SIGKILL.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// runAs chowns root to the user the server runs as and returns that
// user's credential: nil (this process's) unless running as root.
func runAs(root string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	uid, gid := 65534, 65534 // nobody
	if u, err := user.Lookup("postgres"); err == nil {
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	if err := os.Chown(root, uid, gid); err != nil {
		return nil, err
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited while starting: %s", s.Log())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections: %w (last: %v)\n%s", ctx.Err(), err, s.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Log returns the server's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.root, "server.log"))
	return string(b)
}

// URL is the connection URL of database db on the server.
func (s *Server) URL(db string) string {
	return "postgres://postgres@/" + db + "?host=" + s.root + "&sslmode=disable"
}

// CreateDB creates a new, empty database and returns its URL.
func (s *Server) CreateDB(ctx context.Context) (string, error) {
	s.mu.Lock()
	s.seq++
	name := fmt.Sprintf("test%d", s.seq)
	s.mu.Unlock()
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// Stop shuts the server down (fast shutdown, then SIGKILL after 15 s) and
// removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		syscall.Kill(s.cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	os.RemoveAll(s.root)
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
)

// NewDB returns the URL of a new database on a server shared by the tests
// of this test binary, starting it on first use. It skips the test when the
// PostgreSQL binaries are absent, and fails it when they are present but
// the server does not start. Call StopShared from TestMain after m.Run.
func NewDB(t testing.TB) string {
	t.Helper()
	sharedMu.Lock()
	if shared == nil && sharedErr == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		shared, sharedErr = Start(ctx)
		cancel()
	}
	srv, err := shared, sharedErr
	sharedMu.Unlock()
	if errors.Is(err, ErrNoPostgres) {
		t.Skipf("PostgreSQL backend not tested: %v", err)
	}
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, err := srv.CreateDB(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// StopShared stops the server NewDB started, if it did.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
}

// Root is the server's directory (its socket's too).
func (s *Server) Root() string { return s.root }
