package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codecell/codecell/internal/envs"
)

// ConfigureEnvironmentInput is the input of configure_environment.
type ConfigureEnvironmentInput struct {
	Type string `json:"type" jsonschema:"system, venv, uv or conda."`
	Path string `json:"path,omitempty" jsonschema:"An existing environment's absolute directory; without it (venv, uv) codecell creates and manages one."`
	Name string `json:"name,omitempty" jsonschema:"A conda environment's name, for reference."`
	// SystemPackages is a pointer: absent means true.
	SystemPackages *bool `json:"system_packages,omitempty" jsonschema:"For a venv or uv environment codecell makes: whether it also sees the system's packages (pandas, numpy, matplotlib and the rest), under its own. Default true."`
}

// InstallDependenciesInput is the input of install_dependencies.
type InstallDependenciesInput struct {
	Packages []string `json:"packages" jsonschema:"PEP 508 requirements: a name, optional [extras] and version specifiers, e.g. pandas>=2. No URLs, markers or installer options."`
	IndexURL string   `json:"index_url,omitempty" jsonschema:"A package index to install from instead of the configured one."`
}

// InstallDependenciesOutput is the result of install_dependencies.
type InstallDependenciesOutput struct {
	Environment envs.Config    `json:"environment"`
	Results     []envs.Outcome `json:"results"`
	Installed   []PackageState `json:"installed" jsonschema:"What is installed now, for the packages that installed."`
}

// CheckPackagesInput is the input of check_installed_packages.
type CheckPackagesInput struct {
	Packages []string `json:"packages" jsonschema:"Distribution names to look up."`
}

// PackageState is whether one package is installed.
type PackageState struct {
	Name      string `json:"name"`
	Installed bool   `json:"installed"`
	Version   string `json:"version,omitempty"`
}

// CheckPackagesOutput is the result of check_installed_packages.
type CheckPackagesOutput struct {
	Packages []PackageState `json:"packages"`
	Omitted  int            `json:"omitted,omitempty" jsonschema:"Packages past the answer budget, left out of packages: ask for them in a call of their own."`
}

func (s *Server) addEnvTools() {
	addTool(s, "env", &mcp.Tool{
		Name:        "configure_environment",
		Title:       "Choose the Python environment",
		Description: "Choose the Python environment execute_code runs in: system, venv, uv or conda. Without a path, a venv or uv environment is created and managed by codecell. The choice persists.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ConfigureEnvironmentInput) (*mcp.CallToolResult, envs.Config, error) {
		ns := namespaceOf(req)
		c, err := s.envs.Choose(ctx, ns, envs.Choice{Type: in.Type, Path: in.Path, Name: in.Name, SystemPackages: in.SystemPackages})
		if err != nil {
			return nil, envs.Config{}, err
		}
		s.environmentChanged(ns)
		return textResult(fmt.Sprintf("environment: %s (%s)\n", c.Type, c.Python)), c, nil
	})
	addTool(s, "env", &mcp.Tool{
		Name:        "get_environment_config",
		Title:       "Show the Python environment",
		Description: "The Python environment execute_code runs in.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, envs.Config, error) {
		c, err := s.envs.Get(namespaceOf(req))
		if err != nil {
			return nil, envs.Config{}, err
		}
		return textResult(fmt.Sprintf("environment: %s (%s)\n", c.Type, c.Python)), c, nil
	})
	addTool(s, "env", &mcp.Tool{
		Name:        "install_dependencies",
		Title:       "Install Python packages",
		Description: "Install packages into the namespace's environment (configure a venv first), from the configured index or wheelhouse. Each entry is a PEP 508 requirement; the result says per package what happened.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in InstallDependenciesInput) (*mcp.CallToolResult, InstallDependenciesOutput, error) {
		if len(in.Packages) == 0 || len(in.Packages) > 50 {
			return nil, InstallDependenciesOutput{}, fieldError("packages", "give 1 to 50 requirements")
		}
		ns := namespaceOf(req)
		results, err := s.envs.Install(ctx, ns, in.Packages, in.IndexURL)
		if err != nil {
			return nil, InstallDependenciesOutput{}, err
		}
		s.environmentChanged(ns)
		c, _ := s.envs.Get(ns)
		if room := s.textRoom(req); room > 0 {
			s.fitOutcomes(results, room)
		}
		out := InstallDependenciesOutput{Environment: c, Results: results, Installed: []PackageState{}}
		var names []string
		for _, r := range results {
			if r.OK {
				req, _ := envs.ParseRequirement(r.Package)
				names = append(names, req.Name)
			}
		}
		if len(names) > 0 {
			if out.Installed, err = s.checkPackages(ctx, ns, names); err != nil {
				return nil, InstallDependenciesOutput{}, err
			}
		}
		res := textResult(installText(results))
		res.IsError = slices.ContainsFunc(results, func(r envs.Outcome) bool { return !r.OK })
		return res, out, nil
	})
	addTool(s, "env", &mcp.Tool{
		Name:        "check_installed_packages",
		Title:       "Check installed Python packages",
		Description: "The installed version of each package in the namespace's environment, or that it is missing.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in CheckPackagesInput) (*mcp.CallToolResult, CheckPackagesOutput, error) {
		if len(in.Packages) == 0 || len(in.Packages) > 200 {
			return nil, CheckPackagesOutput{}, fieldError("packages", "give 1 to 200 names")
		}
		for _, p := range in.Packages {
			if r, err := envs.ParseRequirement(p); err != nil || r.String() != r.Name {
				return nil, CheckPackagesOutput{}, fieldError("packages", "%q is not a package name", p)
			}
		}
		states, err := s.checkPackages(ctx, namespaceOf(req), in.Packages)
		if err != nil {
			return nil, CheckPackagesOutput{}, err
		}
		out := CheckPackagesOutput{Packages: states}
		if room := s.textRoom(req); room > 0 {
			fitPackages(&out, room)
		}
		var b strings.Builder
		for _, p := range out.Packages {
			if p.Installed {
				fmt.Fprintf(&b, "%s %s\n", p.Name, p.Version)
			} else {
				fmt.Fprintf(&b, "%s not installed\n", p.Name)
			}
		}
		if out.Omitted > 0 {
			fmt.Fprintf(&b, "... %d more past the answer budget: ask for them in a call of their own\n", out.Omitted)
		}
		return textResult(b.String()), out, nil
	})
}

// checkPackageCode looks the names up with importlib.metadata, in the
// namespace's own interpreter and sandbox.
const checkPackageCode = `
import importlib.metadata as md
result = {}
for n in names:
    try:
        result[n] = md.version(n)
    except md.PackageNotFoundError:
        result[n] = None
`

func (s *Server) checkPackages(ctx context.Context, ns string, names []string) ([]PackageState, error) {
	req, err := s.namespaceRequest(ctx, ns)
	if err != nil {
		return nil, err
	}
	req.Code = checkPackageCode
	req.Context = map[string]any{"names": names}
	req.Timeout = 30 * time.Second
	res := s.exec.Exec(ctx, req)
	if !res.OK {
		return nil, fmt.Errorf("check packages: %s: %s", res.Error.Type, res.Error.Message)
	}
	found, _ := res.Result.(map[string]any)
	out := make([]PackageState, len(names))
	for i, n := range names {
		out[i].Name = n
		if v, ok := found[n].(string); ok {
			out[i].Installed, out[i].Version = true, v
		}
	}
	return out, nil
}

// environmentChanged drops ns's warm sandboxes, whose fork servers started
// with the environment as it was: one that preloaded the system's pandas
// must not serve after a pandas was installed into the environment, nor
// after the environment stopped seeing the system's packages.
func (s *Server) environmentChanged(ns string) {
	if r, ok := s.exec.(interface{ Refresh(workspace string) }); ok {
		r.Refresh(s.Workspace(ns))
	}
}

// installText is install_dependencies' text: a line per requirement, and
// the installer's output under each that failed.
func installText(results []envs.Outcome) string {
	var b strings.Builder
	for _, r := range results {
		if r.OK {
			fmt.Fprintf(&b, "installed %s\n", r.Package)
			continue
		}
		fmt.Fprintf(&b, "FAILED %s: %s\n", r.Package, r.Error)
		if r.Output != "" {
			fmt.Fprintf(&b, "%s\n", r.Output)
		}
	}
	return b.String()
}
