package server

import (
	"context"

	"github.com/codecell/codecell/internal/sandbox"
	"github.com/codecell/codecell/internal/workspace"
)

// What runCode (exec.go) sets up before an execution enters the sandbox:
// the namespace's workspace volume, its skills directory and its Python
// environment.

// volume returns a namespace's workspace, set up (created, mounted,
// indexed) the first time. Everything that runs code or touches files in a
// namespace goes through it first, so that its sandboxes mount what it is.
func (s *Server) volume(ns string) (*workspace.Volume, error) {
	vs, err := s.volumes()
	if err != nil {
		return nil, err
	}
	return vs.Volume(s.Workspace(ns))
}

// skillsDir is the host directory of ns's skills for its executions, or ""
// (no skills package) when the skills are off or cannot be prepared.
func (s *Server) skillsDir(ctx context.Context, ns string) string {
	if s.skills == nil {
		return ""
	}
	dir, err := s.skills.Dir(ctx, ns)
	if err != nil {
		s.log.Error("skills unavailable to the execution", "namespace", ns, "error", err)
		return ""
	}
	return dir
}

// withEnvironment points an execution at the namespace's environment.
func (s *Server) withEnvironment(ns string, req *sandbox.Request) error {
	if s.envs == nil {
		return nil
	}
	c, err := s.envs.Get(ns)
	if err != nil {
		return err
	}
	req.Python, req.ReadOnly = c.SandboxPython()
	return nil
}
