package skills

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/codecell/codecell/internal/store"
)

// Skill is one version of a saved skill.
type Skill = store.Skill

// Bounds on what a skill may be.
const (
	MaxName        = 64      // characters in a name
	MaxCode        = 1 << 20 // bytes of code, as execute_code's limit
	MaxDescription = 4096    // bytes of description
	MaxTags        = 20      // tags per skill
	MaxTag         = 64      // bytes per tag
)

// ErrNotFound is wrapped by the errors of Load and Delete when the namespace
// has no such skill or version.
var ErrNotFound = errors.New("no such skill")

// InvalidError is a bad argument: Field names it, Rule says what it broke.
// Its message has the same form as the server's other argument errors.
type InvalidError struct {
	Field string
	Rule  string
}

func (e *InvalidError) Error() string { return "invalid argument " + e.Field + ": " + e.Rule }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// SyntaxError is why code does not compile, as Python reports it. Line and
// Column count from 1; 0 means unknown.
type SyntaxError struct {
	Line    int
	Column  int
	Message string
}

func (e *SyntaxError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Message)
	}
	return e.Message
}

// Compiler checks that code compiles, without running it. It returns a
// *SyntaxError when the code does not compile, another error when it could
// not tell. filename is what Python calls the code in its messages.
type Compiler interface {
	Compile(ctx context.Context, ns, filename, code string) error
}

// Draft is what a caller asks to save.
type Draft struct {
	Name        string
	Code        string
	Description string
	Tags        []string
}

// Options configure a Manager.
type Options struct {
	Store *store.Store // required
	// Dir is where skills' files live: those of namespace ns in Dir/ns.
	// Required; created (mode 0711) if missing.
	Dir    string
	Logger *slog.Logger // nil means silent
}

// Manager saves, loads, lists and deletes skills, and keeps their files in
// step with the database. It is safe for concurrent use, also with other
// processes on the same directory and database.
type Manager struct {
	opts   Options
	log    *slog.Logger
	synced sync.Map // namespace -> struct{}: Sync has run for it in this process
}

// New returns a Manager. It touches nothing on disk; each namespace's files
// are checked and repaired the first time Dir (or Save or Delete) needs
// them.
func New(opts Options) (*Manager, error) {
	if opts.Store == nil || opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return nil, errors.New("skills: Store and an absolute Dir are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: opts, log: log}, nil
}

var identifier = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// keywords are Python's reserved words: "import skills.class" cannot be
// written. Soft keywords (match, case, type) are fine as module names.
var keywords = []string{
	"False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
	"def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
	"in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
	"with", "yield",
}

// CheckName reports whether name can name a skill: an ASCII Python
// identifier of at most MaxName characters that is not a keyword and does
// not start with "_" (private by convention, and "__init__" is taken by the
// package machinery). The error is an *InvalidError on "name".
func CheckName(name string) error {
	switch {
	case name == "":
		return invalid("name", "must not be empty")
	case len(name) > MaxName:
		return invalid("name", "is %d characters; at most %d", len(name), MaxName)
	case name[0] >= '0' && name[0] <= '9':
		return invalid("name", "%q starts with a digit; it must be a Python identifier", name)
	case name[0] == '_':
		return invalid("name", "%q starts with _; start with a letter", name)
	case !identifier.MatchString(name):
		return invalid("name", "%q is not a Python identifier: use ASCII letters, digits and _", name)
	case slices.Contains(keywords, name):
		return invalid("name", "%q is a Python keyword", name)
	}
	return nil
}

// checkNamespace refuses a namespace that would not be one directory
// under Dir (or would collide with a lock file, which starts with ".").
func checkNamespace(ns string) error {
	if ns == "" || strings.ContainsAny(ns, "/\x00") || strings.HasPrefix(ns, ".") {
		return fmt.Errorf("skills: bad namespace %q", ns)
	}
	return nil
}

// check validates a draft and returns it with its tags trimmed and
// de-duplicated.
func (d Draft) check() (Draft, error) {
	if err := CheckName(d.Name); err != nil {
		return d, err
	}
	switch {
	case strings.TrimSpace(d.Code) == "":
		return d, invalid("code", "must not be empty")
	case len(d.Code) > MaxCode:
		return d, invalid("code", "is %d bytes; the limit is %d (1 MiB)", len(d.Code), MaxCode)
	case !utf8.ValidString(d.Code):
		return d, invalid("code", "is not valid UTF-8")
	case strings.TrimSpace(d.Description) == "":
		return d, invalid("description", "must not be empty: say what the skill does")
	case len(d.Description) > MaxDescription:
		return d, invalid("description", "is %d bytes; at most %d", len(d.Description), MaxDescription)
	case !utf8.ValidString(d.Description):
		return d, invalid("description", "is not valid UTF-8")
	case len(d.Tags) > MaxTags:
		return d, invalid("tags", "has %d tags; at most %d", len(d.Tags), MaxTags)
	}
	tags := make([]string, 0, len(d.Tags))
	for _, t := range d.Tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "":
			return d, invalid("tags", "a tag is empty")
		case len(t) > MaxTag:
			return d, invalid("tags", "tag %.20q... is %d bytes; at most %d", t, len(t), MaxTag)
		case !utf8.ValidString(t) || strings.IndexFunc(t, unicode.IsControl) >= 0:
			return d, invalid("tags", "tag %q has control characters or invalid UTF-8", t)
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	d.Tags = tags
	return d, nil
}

// Save checks d, asks c whether the code compiles, and stores it as the
// next version of d.Name in ns (1 for a new name); the namespace's files
// then show it. A bad argument or code that does not compile is an
// *InvalidError (the compiler's line and message in its Rule).
//
// The database commit comes first: once it is done the version is saved,
// even if writing its files then fails (Save then says so, and the next
// Dir or Sync writes them).
func (m *Manager) Save(ctx context.Context, ns string, d Draft, c Compiler) (Skill, error) {
	if err := checkNamespace(ns); err != nil {
		return Skill{}, err
	}
	d, err := d.check()
	if err != nil {
		return Skill{}, err
	}
	if c == nil {
		return Skill{}, errors.New("skills: no compiler to check the code with")
	}
	// Outside the lock: compiling runs a sandbox and may take a while.
	if err := c.Compile(ctx, ns, d.Name+".py", d.Code); err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return Skill{}, invalid("code", "does not compile: %v", se)
		}
		return Skill{}, fmt.Errorf("check that skill %s compiles: %w", d.Name, err)
	}
	dir, err := m.Dir(ctx, ns)
	if err != nil {
		return Skill{}, err
	}
	unlock, err := m.lock(ns)
	if err != nil {
		return Skill{}, err
	}
	defer unlock()
	sk, err := m.opts.Store.SaveSkill(ctx, store.Skill{
		Namespace: ns, Name: d.Name, Description: d.Description, Tags: d.Tags, Code: d.Code,
	})
	if err != nil {
		return Skill{}, err
	}
	if err := materialise(dir, sk); err != nil {
		m.synced.Delete(ns) // the next Dir tries again
		return sk, fmt.Errorf("skill %s version %d is saved, but its files could not be written (they will be on the next use): %w",
			sk.Name, sk.Version, err)
	}
	m.log.Info("skill saved", "namespace", ns, "skill", sk.Name, "version", sk.Version)
	return sk, nil
}

// Load returns version of the skill name in ns; version 0 means the latest.
func (m *Manager) Load(ctx context.Context, ns, name string, version int) (Skill, error) {
	if err := checkNamespace(ns); err != nil {
		return Skill{}, err
	}
	if err := CheckName(name); err != nil {
		return Skill{}, err
	}
	if version < 0 {
		return Skill{}, invalid("version", "%d is negative; versions count from 1 (omit it for the latest)", version)
	}
	sk, err := m.opts.Store.GetSkill(ctx, ns, name, version)
	if errors.Is(err, store.ErrNotFound) {
		if version == 0 {
			return Skill{}, fmt.Errorf("skill %s: %w", name, ErrNotFound)
		}
		return Skill{}, fmt.Errorf("skill %s version %d: %w", name, version, ErrNotFound)
	}
	return sk, err
}

// List returns the latest version of each skill in ns whose name,
// description or tags contain every word of query (case-insensitive), by
// name. An empty query matches every skill.
func (m *Manager) List(ctx context.Context, ns, query string) ([]Skill, error) {
	if err := checkNamespace(ns); err != nil {
		return nil, err
	}
	all, err := m.opts.Store.ListSkills(ctx, ns)
	if err != nil {
		return nil, err
	}
	terms := strings.Fields(strings.ToLower(query))
	out := make([]Skill, 0, len(all))
	for _, sk := range all {
		text := strings.ToLower(sk.Name + "\n" + sk.Description + "\n" + strings.Join(sk.Tags, "\n"))
		if !slices.ContainsFunc(terms, func(t string) bool { return !strings.Contains(text, t) }) {
			out = append(out, sk)
		}
	}
	return out, nil
}

// Delete deletes every version of the skill name in ns, and its files. It
// returns how many versions the skill had reached (its latest version
// number).
func (m *Manager) Delete(ctx context.Context, ns, name string) (int, error) {
	if err := CheckName(name); err != nil {
		return 0, err
	}
	dir, err := m.Dir(ctx, ns)
	if err != nil {
		return 0, err
	}
	unlock, err := m.lock(ns)
	if err != nil {
		return 0, err
	}
	defer unlock()
	latest, err := m.Load(ctx, ns, name, 0)
	if err != nil {
		return 0, err
	}
	if err := m.opts.Store.DeleteSkill(ctx, ns, name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return 0, fmt.Errorf("skill %s: %w", name, ErrNotFound)
		}
		return 0, err
	}
	if err := removeSkill(dir, name); err != nil {
		m.synced.Delete(ns)
		return latest.Version, fmt.Errorf("skill %s is deleted, but its files could not be removed (they will be on the next use): %w", name, err)
	}
	m.log.Info("skill deleted", "namespace", ns, "skill", name, "versions", latest.Version)
	return latest.Version, nil
}

// Dir returns the host directory of ns's skills, the root of its "skills"
// package, after making sure it exists and, the first time in this process,
// that its files match the database (Sync).
func (m *Manager) Dir(ctx context.Context, ns string) (string, error) {
	if err := checkNamespace(ns); err != nil {
		return "", err
	}
	dir := filepath.Join(m.opts.Dir, ns)
	if _, done := m.synced.Load(ns); done {
		if _, err := os.Stat(dir); err == nil {
			return dir, nil
		}
	}
	if err := m.Sync(ctx, ns); err != nil {
		return "", err
	}
	m.synced.Store(ns, struct{}{})
	return dir, nil
}

// Sync makes ns's files match the database: it writes the files of each
// skill's latest version where they are missing or differ, and removes
// everything else under the namespace's directory (skills deleted while
// their files were being removed, temporary files of an interrupted write).
func (m *Manager) Sync(ctx context.Context, ns string) error {
	if err := checkNamespace(ns); err != nil {
		return err
	}
	unlock, err := m.lock(ns)
	if err != nil {
		return err
	}
	defer unlock()
	latest, err := m.opts.Store.ListSkills(ctx, ns)
	if err != nil {
		return fmt.Errorf("sync skills: %w", err)
	}
	dir := filepath.Join(m.opts.Dir, ns)
	if err := mkdir(dir, dirMode); err != nil {
		return fmt.Errorf("sync skills: %w", err)
	}
	keep := map[string]bool{}
	for _, sk := range latest {
		if CheckName(sk.Name) != nil {
			// Not written by Save; never make it importable.
			m.log.Warn("skill with an invalid name ignored", "namespace", ns, "skill", sk.Name)
			continue
		}
		keep[sk.Name] = true
		if err := materialise(dir, sk); err != nil {
			return fmt.Errorf("sync skills: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sync skills: %w", err)
	}
	removed := false
	for _, e := range entries {
		if e.IsDir() && keep[e.Name()] {
			continue
		}
		m.log.Info("skills: removing what the database does not know", "namespace", ns, "path", e.Name())
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("sync skills: %w", err)
		}
		removed = true
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}

// lock takes ns's advisory lock, which serializes changes to its skills
// across goroutines (each call opens its own descriptor) and processes.
func (m *Manager) lock(ns string) (func(), error) {
	if err := mkdir(m.opts.Dir, 0o711); err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(m.opts.Dir, "."+ns+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("skills: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("skills: lock: %w", err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}
