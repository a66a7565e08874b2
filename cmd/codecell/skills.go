package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/codecell/codecell/internal/server"
	"github.com/codecell/codecell/internal/skills"
	"github.com/codecell/codecell/internal/store"
)

// skillsDir is where the skills' files live under a data dir (README, "State that lasts").
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
	if sub != "list" && sub != "show" && sub != "delete" {
		return fmt.Errorf("unknown skills command %q: want list, show or delete", sub)
	}
	if (sub == "show" || sub == "delete") && len(positional) != 1 {
		return errors.New(usage)
	}
	g.quiet()
	log, err := g.logger()
	if err != nil {
		return err
	}
	cfg, dataDir, err := g.loadConfig()
	if err != nil {
		return err
	}
	print := printer(g.stdout, *asJSON)

	// No database yet means no skills; do not create one to say so.
	if _, err := os.Stat(dbPath(dataDir)); cfg.Store.URL == "" && errors.Is(err, os.ErrNotExist) {
		if sub == "list" {
			none := server.ListSkillsOutput{Skills: []server.SkillInfo{}}
			return print(none, none.Text())
		}
		return fmt.Errorf("skill %s: %w", positional[0], skills.ErrNotFound)
	}
	db, err := store.OpenWith(store.Options{Path: dbPath(dataDir), URL: cfg.Store.URL, Replica: g.replicaName(cfg)})
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
		out, err := server.ListSkills(ctx, m, *ns, server.ListSkillsInput{Query: strings.Join(positional, " ")})
		if err != nil {
			return err
		}
		if len(out.Skills) == 0 {
			return print(out, out.Text())
		}
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		for _, sk := range out.Skills {
			fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\n", sk.Name, sk.Version, strings.Join(sk.Tags, ","), sk.Summary())
		}
		tw.Flush()
		return print(out, b.String())
	case "show":
		out, err := server.LoadSkill(ctx, m, *ns, server.LoadSkillInput{Name: positional[0], Version: *version})
		if err != nil {
			return err
		}
		return print(out, out.Text())
	default: // delete
		out, err := server.DeleteSkill(ctx, m, *ns, server.DeleteSkillInput{Name: positional[0]})
		if err != nil {
			return err
		}
		return print(out, out.Text())
	}
}
