package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
)

// skillsDir is where the skills' files live under a data dir (SPEC §9).
func skillsDir(dataDir string) string { return filepath.Join(dataDir, "skills") }

func runSkills(ctx context.Context, g *globals, args []string) error {
	const usage = "usage: codecell skills list [QUERY] | show NAME [--version N] | delete NAME [--namespace NS] [--json]"
	if len(args) == 0 {
		return errors.New(usage)
	}
	sub, args := args[0], args[1:]
	fs := g.flags()
	ns := fs.String("namespace", server.DefaultNamespace, "the namespace whose skills to use")
	asJSON := fs.Bool("json", false, "print JSON")
	version := fs.Int("version", 0, "the version to show (show); 0 means the latest")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if g.logLevel == "info" {
		g.logLevel = "warn"
	}
	log, err := g.logger()
	if err != nil {
		return err
	}
	_, dataDir, err := g.loadConfig()
	if err != nil {
		return err
	}
	print := func(v any, text string) error {
		if *asJSON {
			enc := json.NewEncoder(g.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		_, err := fmt.Fprint(g.stdout, text)
		return err
	}
	if sub != "list" && sub != "show" && sub != "delete" {
		return fmt.Errorf("unknown skills command %q: want list, show or delete", sub)
	}
	if (sub == "show" || sub == "delete") && len(positional) != 1 {
		return errors.New(usage)
	}

	// No database yet means no skills; do not create one to say so.
	dbPath := filepath.Join(dataDir, "codecell.db")
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		if sub == "list" {
			return print(server.ListSkillsOutput{Skills: []server.SkillInfo{}}, "(no skills)\n")
		}
		return fmt.Errorf("skill %s: %w", positional[0], skills.ErrNotFound)
	}
	db, err := store.Open(dbPath)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer db.Close()
	m, err := skills.New(skills.Options{Store: db, Dir: skillsDir(dataDir), Logger: log})
	if err != nil {
		return err
	}

	switch sub {
	case "list":
		list, err := m.List(ctx, *ns, strings.Join(positional, " "))
		if err != nil {
			return err
		}
		out := server.ListSkillsOutput{Skills: make([]server.SkillInfo, len(list))}
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for i, sk := range list {
			out.Skills[i] = server.SkillInfo{Name: sk.Name, Version: sk.Version, Description: sk.Description, Tags: nonNilTags(sk.Tags), Created: sk.CreatedAt}
			desc, _, _ := strings.Cut(strings.TrimSpace(sk.Description), "\n")
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\n", sk.Name, sk.Version, strings.Join(sk.Tags, ","), desc)
		}
		tw.Flush()
		if len(list) == 0 {
			b.WriteString("(no skills)\n")
		}
		return print(out, b.String())
	case "show":
		name := positional[0]
		latest, err := m.Load(ctx, *ns, name, 0)
		if err != nil {
			return err
		}
		sk := latest
		if *version != 0 {
			if sk, err = m.Load(ctx, *ns, name, *version); err != nil {
				return err
			}
		}
		out := server.LoadSkillOutput{
			Name: sk.Name, Version: sk.Version, LatestVersion: latest.Version, Description: sk.Description,
			Tags: nonNilTags(sk.Tags), Created: sk.CreatedAt, Code: sk.Code, Import: "from skills." + sk.Name + " import ...",
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s version %d of %d, created %s\n", sk.Name, sk.Version, latest.Version, sk.CreatedAt.UTC().Format(time.RFC3339))
		if len(sk.Tags) > 0 {
			fmt.Fprintf(&b, "tags: %s\n", strings.Join(sk.Tags, ", "))
		}
		fmt.Fprintf(&b, "%s\n\n%s", strings.TrimSpace(sk.Description), sk.Code)
		if !strings.HasSuffix(sk.Code, "\n") {
			b.WriteString("\n")
		}
		return print(out, b.String())
	default: // delete
		n, err := m.Delete(ctx, *ns, positional[0])
		if err != nil {
			return err
		}
		return print(server.DeleteSkillOutput{Name: positional[0], Versions: n},
			fmt.Sprintf("deleted skill %s (%d versions)\n", positional[0], n))
	}
}

func nonNilTags(tags []string) []string {
	if tags == nil {
		return []string{}
	}
	return tags
}
