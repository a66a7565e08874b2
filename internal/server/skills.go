package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/catalog"
	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/skills"
)

// SaveSkillInput is the input of save_skill.
type SaveSkillInput struct {
	Name        string   `json:"name" jsonschema:"A Python identifier of at most 64 ASCII letters, digits and _, starting with a letter, not a keyword. Saving an existing name adds a version."`
	Code        string   `json:"code" jsonschema:"The module's Python source; it must compile. At most 1 MiB."`
	Description string   `json:"description" jsonschema:"What the skill does and how to call it."`
	Tags        []string `json:"tags,omitempty" jsonschema:"Words to find it by with list_skills."`
}

// SaveSkillOutput is the result of save_skill.
type SaveSkillOutput struct {
	Name    string `json:"name"`
	Version int    `json:"version" jsonschema:"The version this save made: 1 for a new name."`
	Path    string `json:"path" jsonschema:"The code file, under the namespace's skills."`
	Import  string `json:"import" jsonschema:"How code in execute_code imports it."`
}

// LoadSkillInput is the input of load_skill.
type LoadSkillInput struct {
	Name    string `json:"name" jsonschema:"The skill's name."`
	Version int    `json:"version,omitempty" jsonschema:"The version to load, from 1; omitted means the latest."`
}

// SkillInfo describes one version of a skill.
type SkillInfo struct {
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Description string    `json:"description"`
	Tags        []string  `json:"tags"`
	Created     time.Time `json:"created"`
}

// LoadSkillOutput is the result of load_skill.
type LoadSkillOutput struct {
	Name          string    `json:"name"`
	Version       int       `json:"version"`
	LatestVersion int       `json:"latest_version" jsonschema:"The newest version of the skill, which imports get."`
	Description   string    `json:"description"`
	Tags          []string  `json:"tags"`
	Created       time.Time `json:"created"`
	Code          string    `json:"code"`
	Import        string    `json:"import" jsonschema:"How code in execute_code imports it."`
}

// ListSkillsInput is the input of list_skills.
type ListSkillsInput struct {
	Query string `json:"query,omitempty" jsonschema:"What the skill does, in words; best match first; omitted lists every skill."`
}

// ListSkillsOutput is the result of list_skills.
type ListSkillsOutput struct {
	Skills []SkillInfo `json:"skills" jsonschema:"The latest version of each matching skill, by name."`
}

// DeleteSkillInput is the input of delete_skill.
type DeleteSkillInput struct {
	Name string `json:"name" jsonschema:"The skill to delete, with all its versions."`
}

// DeleteSkillOutput is the result of delete_skill.
type DeleteSkillOutput struct {
	Name     string `json:"name"`
	Versions int    `json:"versions" jsonschema:"How many versions were deleted."`
}

func (s *Server) addSkillTools() {
	addTool(s, "skills", &mcp.Tool{
		Name:        "save_skill",
		Title:       "Save reusable code as a skill",
		Description: "Save a Python module under a name, for later executions to import: from skills.<name> import <function>. Saving an existing name adds a version.",
	}, s.saveSkill)
	addTool(s, "skills", &mcp.Tool{
		Name:        "load_skill",
		Title:       "Show a skill's code",
		Description: "A saved skill's code and metadata; the latest version unless one is given.",
	}, s.loadSkill)
	addTool(s, "skills", &mcp.Tool{
		Name:        "list_skills",
		Title:       "List saved skills",
		Description: "The saved skills (latest versions) that match the query, best first: by their name, description and tags, as search_tools ranks tools.",
	}, s.listSkills)
	addTool(s, "skills", &mcp.Tool{
		Name:        "delete_skill",
		Annotations: destroys(),
		Title:       "Delete a skill",
		Description: "Delete a saved skill: every version, and its module.",
	}, s.deleteSkill)
}

func importOf(name string) string { return "from skills." + name + " import ..." }

func (s *Server) saveSkill(ctx context.Context, req *mcp.CallToolRequest, in SaveSkillInput) (*mcp.CallToolResult, SaveSkillOutput, error) {
	ns := namespaceOf(req)
	sk, err := s.skills.Save(ctx, ns, skills.Draft{Name: in.Name, Code: in.Code, Description: in.Description, Tags: in.Tags},
		sandboxCompiler{s})
	if err != nil {
		return nil, SaveSkillOutput{}, err
	}
	out := SaveSkillOutput{
		Name: sk.Name, Version: sk.Version,
		Path:   "skills/" + skills.CodePath(sk.Name),
		Import: importOf(sk.Name),
	}
	return textResult(fmt.Sprintf("saved skill %s version %d; import it with %s\n", sk.Name, sk.Version, out.Import)), out, nil
}

func (s *Server) loadSkill(ctx context.Context, req *mcp.CallToolRequest, in LoadSkillInput) (*mcp.CallToolResult, LoadSkillOutput, error) {
	out, err := LoadSkill(ctx, s.skills, namespaceOf(req), in)
	if err != nil {
		return nil, LoadSkillOutput{}, err
	}
	out.Code = s.fitText(out.Code, s.textRoom(req), "the whole module is what "+out.Import+" imports, and code can print it with inspect.getsource")
	return textResult(out.Text()), out, nil
}

func (s *Server) listSkills(ctx context.Context, req *mcp.CallToolRequest, in ListSkillsInput) (*mcp.CallToolResult, ListSkillsOutput, error) {
	out, err := ListSkills(ctx, s.skills, namespaceOf(req), in)
	if err != nil {
		return nil, ListSkillsOutput{}, err
	}
	// The skills are in the structured content and again in the text: as
	// many as fit the answer budget, best first, the rest counted.
	text := ""
	if room := s.textRoom(req); room > 0 {
		used := 0
		for i, sk := range out.Skills {
			raw, _ := json.Marshal(sk)
			if used += 2 * len(raw); used > room {
				text = fmt.Sprintf("[%d of %d skills listed, to the answer budget: a query narrows the list]\n", i, len(out.Skills))
				out.Skills = out.Skills[:i]
				break
			}
		}
	}
	return textResult(out.Text() + text), out, nil
}

func (s *Server) deleteSkill(ctx context.Context, req *mcp.CallToolRequest, in DeleteSkillInput) (*mcp.CallToolResult, DeleteSkillOutput, error) {
	out, err := DeleteSkill(ctx, s.skills, namespaceOf(req), in)
	if err != nil {
		return nil, DeleteSkillOutput{}, err
	}
	return textResult(out.Text()), out, nil
}

// LoadSkill is load_skill on m for namespace ns; the codecell skills
// command shares it, so that both answer alike. A version the skill does not
// have is a *FieldError on "version" that says which it has.
func LoadSkill(ctx context.Context, m *skills.Manager, ns string, in LoadSkillInput) (LoadSkillOutput, error) {
	latest, err := m.Load(ctx, ns, in.Name, 0)
	if err != nil {
		return LoadSkillOutput{}, err
	}
	sk := latest
	if in.Version != 0 {
		if sk, err = m.Load(ctx, ns, in.Name, in.Version); err != nil {
			if errors.Is(err, skills.ErrNotFound) {
				err = fieldError("version", "skill %s has versions 1 to %d", in.Name, latest.Version)
			}
			return LoadSkillOutput{}, err
		}
	}
	return LoadSkillOutput{
		Name: sk.Name, Version: sk.Version, LatestVersion: latest.Version, Description: sk.Description,
		Tags: nonNil(sk.Tags), Created: sk.CreatedAt, Code: sk.Code, Import: importOf(sk.Name),
	}, nil
}

// Text is o for hosts that only show text: a heading, the description, the
// tags and the code.
func (o LoadSkillOutput) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s version %d of %d, %s\n%s\n", o.Name, o.Version, o.LatestVersion,
		o.Created.UTC().Format(time.RFC3339), o.Description)
	if len(o.Tags) > 0 {
		fmt.Fprintf(&b, "tags: %s\n", strings.Join(o.Tags, ", "))
	}
	fmt.Fprintf(&b, "\n%s", o.Code)
	if !strings.HasSuffix(o.Code, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}

// ListSkills is list_skills on m for namespace ns.
func ListSkills(ctx context.Context, m *skills.Manager, ns string, in ListSkillsInput) (ListSkillsOutput, error) {
	list, err := m.List(ctx, ns, "")
	if err != nil {
		return ListSkillsOutput{}, err
	}
	if strings.TrimSpace(in.Query) != "" {
		list = rankSkills(list, in.Query)
	}
	out := ListSkillsOutput{Skills: make([]SkillInfo, len(list))}
	for i, sk := range list {
		out.Skills[i] = SkillInfo{Name: sk.Name, Version: sk.Version, Description: sk.Description, Tags: nonNil(sk.Tags), Created: sk.CreatedAt}
	}
	return out, nil
}

// Text is o for hosts that only show text: a line per skill with its
// name, version, tags and the first line of its description.
func (o ListSkillsOutput) Text() string {
	if len(o.Skills) == 0 {
		return "(no skills)\n"
	}
	var b strings.Builder
	for _, sk := range o.Skills {
		tags := ""
		if len(sk.Tags) > 0 {
			tags = " [" + strings.Join(sk.Tags, ", ") + "]"
		}
		fmt.Fprintf(&b, "%s (v%d)%s: %s\n", sk.Name, sk.Version, tags, sk.Summary())
	}
	return b.String()
}

// Summary is the first line of the skill's description.
func (sk SkillInfo) Summary() string {
	line, _, _ := strings.Cut(strings.TrimSpace(sk.Description), "\n")
	return line
}

// DeleteSkill is delete_skill on m for namespace ns.
func DeleteSkill(ctx context.Context, m *skills.Manager, ns string, in DeleteSkillInput) (DeleteSkillOutput, error) {
	n, err := m.Delete(ctx, ns, in.Name)
	if err != nil {
		return DeleteSkillOutput{}, err
	}
	return DeleteSkillOutput{Name: in.Name, Versions: n}, nil
}

// Text is o for hosts that only show text.
func (o DeleteSkillOutput) Text() string {
	return fmt.Sprintf("deleted skill %s (%d versions)\n", o.Name, o.Versions)
}

func nonNil(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}

// compileCode compiles, and does not run, source: its line and message come
// back when it does not compile.
const compileCode = `
try:
    compile(source, filename, "exec", dont_inherit=True)
    result = None
except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
    if isinstance(e, SyntaxError):
        result = {"line": e.lineno or 0, "column": e.offset or 0, "message": e.msg}
    else:
        result = {"line": 0, "column": 0, "message": type(e).__name__ + ": " + str(e)}
`

// sandboxCompiler checks a skill's code in the namespace's own sandbox and
// interpreter, so the untrusted source is parsed only by a sandboxed Python.
type sandboxCompiler struct{ s *Server }

func (c sandboxCompiler) Compile(ctx context.Context, ns, filename, code string) error {
	// As ns's executions ask, so that a warm sandbox serves.
	req, err := c.s.namespaceRequest(ctx, ns)
	if err != nil {
		return err
	}
	req.Code = compileCode
	req.Context = map[string]any{"source": code, "filename": filename}
	req.Timeout = c.s.cfg.Sandbox.Timeout
	res := c.s.exec.Exec(ctx, req)
	if !res.OK {
		if res.Error == nil {
			return errors.New("the sandbox gave no result")
		}
		return fmt.Errorf("%s: %s", res.Error.Type, res.Error.Message)
	}
	found, ok := res.Result.(map[string]any)
	if !ok {
		return nil
	}
	line, _ := found["line"].(float64)
	column, _ := found["column"].(float64)
	message, _ := found["message"].(string)
	return &skills.SyntaxError{Line: int(line), Column: int(column), Message: message}
}

// namespaceRequest is the part of a sandbox request that is the same for all
// of ns's executions: its workspace, skills and interpreter. The pool keeps
// warm sandboxes by it.
func (s *Server) namespaceRequest(ctx context.Context, ns string) (sandbox.Request, error) {
	req := sandbox.Request{Workspace: s.Workspace(ns), Skills: s.skillsDir(ctx, ns), Network: s.networks.of(ns)}
	if _, err := s.volume(ns); err != nil { // mounted before a sandbox binds it
		return req, err
	}
	return req, s.withEnvironment(ns, &req)
}

// warmer fills the warm pool for a namespace's executions;
// *sandbox.Manager is one.
type warmer interface{ WarmFor(req sandbox.Request) }

// Warm fills ns's warm pool in the background of its next calls, as a use of
// the namespace: an idle one gives it back (tenants).
func (s *Server) Warm(ctx context.Context, ns string) {
	w, ok := s.exec.(warmer)
	if !ok {
		return
	}
	defer s.enter(ns)()
	w.WarmFor(s.WarmRequest(ctx, ns))
}

// WarmRequest is what ns's executions ask the sandbox for (workspace,
// interpreter, skills), without code: for sandbox.Manager.WarmFor, so that
// the sandboxes warmed are the ones its executions take.
func (s *Server) WarmRequest(ctx context.Context, ns string) sandbox.Request {
	req, err := s.namespaceRequest(ctx, ns)
	if err != nil {
		s.log.Warn("warm pool", "namespace", ns, "error", err)
	}
	return req
}

// rankSkills returns the skills that match query, best first: those the
// tool search ranks (words stemmed, split and related, as search_tools finds
// tools), then those whose name, description or tags contain every word of
// the query (what list_skills matched before, so "pars" still finds
// parse_rows).
func rankSkills(all []skills.Skill, query string) []skills.Skill {
	tools := make([]catalog.Tool, len(all))
	byName := make(map[string]skills.Skill, len(all))
	for i, sk := range all {
		tools[i] = catalog.Tool{Server: "skills", Name: sk.Name, Description: sk.Description + "\n" + strings.Join(sk.Tags, " ")}
		byName[sk.Name] = sk
	}
	var out []skills.Skill
	seen := map[string]bool{}
	for _, h := range catalog.New(tools).Search(catalog.Query{Text: query, Limit: catalog.MaxLimit}).Hits {
		out = append(out, byName[h.Tool.Name])
		seen[h.Tool.Name] = true
	}
	words := strings.Fields(strings.ToLower(query))
	for _, sk := range all {
		text := strings.ToLower(sk.Name + "\n" + sk.Description + "\n" + strings.Join(sk.Tags, "\n"))
		if !seen[sk.Name] && !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) {
			out = append(out, sk)
		}
	}
	return out
}

// SkillHit is a saved skill in search_tools' results.
type SkillHit struct {
	Name    string `json:"name"`
	Summary string `json:"summary,omitempty"`
	Import  string `json:"import" jsonschema:"How code imports it."`
}

// maxSkillHits is how many skills search_tools shows beside the tools.
const maxSkillHits = 3

// searchSkills is the namespace's saved skills that match query, for
// search_tools; none for an empty query (list_skills lists them) or when
// skills are off.
func (s *Server) searchSkills(ctx context.Context, ns, query string) []SkillHit {
	if s.skills == nil || strings.TrimSpace(query) == "" {
		return nil
	}
	all, err := s.skills.List(ctx, ns, "")
	if err != nil {
		s.log.Warn("search skills", "namespace", ns, "error", err)
		return nil
	}
	var out []SkillHit
	for _, sk := range rankSkills(all, query) {
		if len(out) == maxSkillHits {
			break
		}
		out = append(out, SkillHit{Name: sk.Name, Summary: firstSentence(sk.Description, 200), Import: importOf(sk.Name)})
	}
	return out
}
