// Package envs manages the Python environment of each namespace: which one
// it uses (the system's, a venv, uv's or conda's), persisted per namespace
// in the database (Options.Store), and the validation of what may be
// installed into it.
//
// Requirements are validated as a strict subset of PEP 508 (names, extras
// and version specifiers; no direct URL references and no markers) and are
// always passed to the installer after "--", never through a shell, so they
// cannot smuggle installer options. The installs themselves run sandboxed
// (sandbox.Manager.Run), writing only into the namespace's environment.
package envs
