package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Skill is one version of a saved skill. The code files themselves live
// beside the database (skills/<namespace>/); this is the metadata and a
// copy of the code, so a version can be loaded after a later save.
type Skill struct {
	Namespace   string
	Name        string
	Version     int // assigned by SaveSkill; ignored on input
	Description string
	Tags        []string
	Code        string
	CreatedAt   time.Time // assigned by SaveSkill
}

// maxSaveAttempts bounds SaveSkill's retries when concurrent saves of one
// name keep taking the number it computed: each retry follows another
// save's commit, so only as many saves at once as this could exhaust it.
const maxSaveAttempts = 100

// SaveSkill stores sk as the next version of sk.Name in sk.Namespace (1 for
// a new name) and returns it with Version and CreatedAt set. Validating the
// name and the code is the caller's job.
func (s *Store) SaveSkill(ctx context.Context, sk Skill) (Skill, error) {
	if sk.Namespace == "" || sk.Name == "" {
		return Skill{}, fmt.Errorf("save skill: empty namespace or name")
	}
	tags := sk.Tags
	if tags == nil {
		tags = []string{}
	}
	tj, err := json.Marshal(tags)
	if err != nil {
		return Skill{}, fmt.Errorf("save skill %s: %w", sk.Name, err)
	}
	sk.CreatedAt = time.Now().UTC()
	// One statement reads the last version and inserts the next; the
	// primary key (namespace, name, version) makes a concurrent save of the
	// same name, from this process or another replica, that took the same
	// number insert nothing (ON CONFLICT DO NOTHING returns no row), and the
	// loser tries again with the number after the winner's. In SQLite the
	// single writer never loses; in PostgreSQL the loser waits for the
	// winner's commit at the conflict, so each retry follows a commit.
	for attempt := 0; ; attempt++ {
		err = s.w.QueryRowContext(ctx, s.q(`INSERT INTO skills
			(namespace, name, version, description, tags, code, created_at)
			SELECT CAST(? AS TEXT), CAST(? AS TEXT), COALESCE(MAX(version), 0) + 1,
				CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT)
			FROM skills WHERE namespace = ? AND name = ?
			ON CONFLICT DO NOTHING
			RETURNING version`),
			sk.Namespace, sk.Name, sk.Description, string(tj), sk.Code, nanos(sk.CreatedAt),
			sk.Namespace, sk.Name).Scan(&sk.Version)
		if !errors.Is(err, sql.ErrNoRows) || attempt == maxSaveAttempts {
			break
		}
	}
	if err != nil {
		return Skill{}, fmt.Errorf("save skill %s: %w", sk.Name, err)
	}
	sk.Tags = tags
	return sk, nil
}

// GetSkill returns version of the skill name in ns; version 0 means the
// latest. It returns an error wrapping ErrNotFound if there is no such
// skill or version.
func (s *Store) GetSkill(ctx context.Context, ns, name string, version int) (Skill, error) {
	if version < 0 {
		return Skill{}, fmt.Errorf("get skill %s: negative version %d", name, version)
	}
	row := s.r.QueryRowContext(ctx, s.q(`SELECT namespace, name, version, description, tags, code, created_at
		FROM skills WHERE namespace = ? AND name = ? AND (? = 0 OR version = ?)
		ORDER BY version DESC LIMIT 1`), ns, name, version, version)
	sk, err := scanSkill(row)
	if errors.Is(err, sql.ErrNoRows) {
		if version == 0 {
			return Skill{}, fmt.Errorf("get skill %s: %w", name, ErrNotFound)
		}
		return Skill{}, fmt.Errorf("get skill %s version %d: %w", name, version, ErrNotFound)
	}
	if err != nil {
		return Skill{}, fmt.Errorf("get skill %s: %w", name, err)
	}
	return sk, nil
}

// ListSkills returns the latest version of each skill in ns, by name.
func (s *Store) ListSkills(ctx context.Context, ns string) ([]Skill, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT s.namespace, s.name, s.version, s.description, s.tags, s.code, s.created_at
		FROM skills s
		JOIN (SELECT name, MAX(version) AS v FROM skills WHERE namespace = ? GROUP BY name) l
		  ON s.name = l.name AND s.version = l.v
		WHERE s.namespace = ?
		ORDER BY s.name`), ns, ns)
	if err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	defer rows.Close()
	var out []Skill
	for rows.Next() {
		sk, err := scanSkill(rows)
		if err != nil {
			return nil, fmt.Errorf("list skills: %w", err)
		}
		out = append(out, sk)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list skills: %w", err)
	}
	// Sorted here, not by ORDER BY alone: PostgreSQL orders text by the
	// database's collation, SQLite by bytes.
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteSkill deletes every version of the skill name in ns. It returns an
// error wrapping ErrNotFound if there was none.
func (s *Store) DeleteSkill(ctx context.Context, ns, name string) error {
	res, err := s.w.ExecContext(ctx, s.q("DELETE FROM skills WHERE namespace = ? AND name = ?"), ns, name)
	if err != nil {
		return fmt.Errorf("delete skill %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("delete skill %s: %w", name, err)
	}
	if n == 0 {
		return fmt.Errorf("delete skill %s: %w", name, ErrNotFound)
	}
	return nil
}

func scanSkill(row interface{ Scan(...any) error }) (Skill, error) {
	var sk Skill
	var tags string
	var created int64
	if err := row.Scan(&sk.Namespace, &sk.Name, &sk.Version, &sk.Description, &tags, &sk.Code, &created); err != nil {
		return Skill{}, err
	}
	if err := json.Unmarshal([]byte(tags), &sk.Tags); err != nil {
		return Skill{}, fmt.Errorf("skill %s tags: %w", sk.Name, err)
	}
	sk.CreatedAt = fromNanos(created)
	return sk, nil
}
