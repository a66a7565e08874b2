// Package codegen turns the tools of upstream MCP servers into the Python
// package that code in the sandbox imports: "from servers.everything import
// get_sum" gives a function with keyword-only, type-hinted parameters and a
// docstring, generated from the tool's JSON Schema, that calls the tool
// through the sandbox's runtime module codecell._rpc.
//
// Generate builds the whole tree: servers/__init__.py (which loads each
// server's module only on first use, so "import servers" stays cheap however
// many tools there are), one package per server that re-exports its tools,
// one module per tool, and servers/INDEX.md for people and agents who browse
// the files. A server not connected yet gets a stand-in package whose import
// waits for it through the host and then loads its real package, so that
// code run while servers start does not fail with ModuleNotFoundError.
// Signature and Source give one tool's signature line and module source, as
// search results show them.
//
// Generation never fails on what an upstream server says about its tools: a
// schema that cannot be read gives a function that takes "**kwargs: Any", a
// type the generator does not understand is hinted "Any", and descriptions
// and names are escaped so that every generated file compiles whatever they
// contain. Only the names the caller chose (server names and the tools'
// identifiers, which the catalog assigns) are checked, and a bad one is an
// error.
//
// The generated code is an interface, not a boundary: it does not validate
// arguments against the schema (the upstream server does) and it does not
// protect against code in the sandbox calling codecell._rpc directly; policy
// is applied by the host, per call.
package codegen
