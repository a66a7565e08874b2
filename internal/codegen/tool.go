package codegen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/codecell/codecell/internal/catalog"
)

// param is one keyword parameter of a tool's function.
type param struct {
	key      string // the argument's name in the tool's schema, as sent
	name     string // its Python name
	hint     string // its type hint
	required bool
	def      string // the Python literal of its default, or "" for the omit sentinel
	defDoc   string // the schema's default as the docstring shows it, or ""
	doc      string // its description
	schema   json.RawMessage
}

// Names of the "**" parameter: extra passes through the arguments a schema
// allows beyond its properties; kwargs stands for all of them when the
// schema could not be read.
const (
	extraName  = "extra"
	kwargsName = "kwargs"
)

// input is what a tool's input schema says about its function's parameters.
type input struct {
	params    []param // in the schema's order; names not yet assigned
	varkw     string  // base name of the "**" parameter, or "" for none
	malformed bool    // the schema could not be read
}

// readInput reads a tool's input schema. Anything but an object schema
// whose "properties", if present, is an object counts as malformed.
func readInput(raw json.RawMessage) input {
	if len(bytes.TrimSpace(raw)) == 0 {
		return input{varkw: extraName}
	}
	o, ok := parseObject(raw)
	if !ok {
		return input{varkw: kwargsName, malformed: true}
	}
	if names := typeNames(o.get("type")); o.get("type") != nil && !slices.Contains(names, "object") {
		return input{varkw: kwargsName, malformed: true}
	}
	var props []member
	if p := o.get("properties"); p != nil {
		if props, ok = members(p); !ok {
			return input{varkw: kwargsName, malformed: true}
		}
	}
	required := make(map[string]bool)
	var extraRequired []string // required names the properties do not list
	if req, ok := o.array("required"); ok {
		listed := make(map[string]bool, len(props))
		for _, m := range props {
			listed[m.key] = true
		}
		for _, r := range req {
			var name string
			if json.Unmarshal(r, &name) != nil || required[name] {
				continue
			}
			required[name] = true
			if !listed[name] {
				extraRequired = append(extraRequired, name)
			}
		}
	}
	var in input
	for _, m := range props {
		p := param{key: m.key, hint: hint(m.val), required: required[m.key], schema: m.val}
		if s, ok := parseObject(m.val); ok {
			p.doc = s.str("description")
			if p.doc == "" {
				p.doc = s.str("title")
			}
			if d, present := s["default"]; present {
				lit, ok := pyScalar(d, maxLiteral)
				if ok && !p.required {
					p.def = lit
				}
				if ok {
					p.defDoc = lit
				} else {
					p.defDoc = truncate(compactJSON(d), maxLiteral)
				}
			}
		}
		in.params = append(in.params, p)
	}
	for _, name := range extraRequired {
		in.params = append(in.params, param{key: name, hint: "Any", required: true})
	}
	// Additional properties are allowed unless the schema says false; an
	// object schema for them still allows some.
	if string(o.get("additionalProperties")) != "false" {
		in.varkw = extraName
	}
	return in
}

// function is the Python code generated for one tool.
type function struct {
	tool   catalog.Tool
	module string // the server's package, servers.<module>
	server string // the server name each call sends
	ident  string // the function's name
	async  string // its async variant's name
	params []param
	varkw  string // the "**" parameter's name, or ""
	input  input

	// Names of the module's helpers, usually _rpc, _OMIT and _args: a
	// tool whose function has one of these names would shadow it, and then
	// its async variant would call the function instead. (A tool named
	// Any or Literal shadows typing's name, which is harmless: annotations
	// are never evaluated, except by typing.get_type_hints.)
	rpc, omit, args string
}

// newFunction prepares the function of tool t, in the package of server
// module.
func newFunction(t catalog.Tool, module string) *function {
	f := &function{tool: t, module: module, server: t.Server, ident: toolIdent(t.Ident)}
	if f.server == "" {
		f.server = module
	}
	f.async = f.ident + "_async"
	own := []string{f.ident, f.async}
	f.rpc = freeName("_rpc", own...)
	f.omit = freeName("_OMIT", own...)
	f.args = freeName("_args", own...)

	f.input = readInput(t.InputSchema)
	keys := make([]string, len(f.input.params))
	for i, p := range f.input.params {
		keys[i] = p.key
	}
	// The body refers to _rpc and _args, so no parameter may be named so.
	names := uniqueNames(keys, map[string]bool{f.rpc: true, f.args: true})
	taken := []string{f.rpc, f.args}
	for i := range f.input.params {
		f.input.params[i].name = names[i]
		taken = append(taken, names[i])
	}
	for _, required := range []bool{true, false} {
		for _, p := range f.input.params {
			if p.required == required {
				f.params = append(f.params, p)
			}
		}
	}
	if f.input.varkw != "" {
		f.varkw = freeName(f.input.varkw, taken...)
	}
	return f
}

// paramList returns the parameters as the def line writes them.
func (f *function) paramList() []string {
	var out []string
	if len(f.params) > 0 {
		out = append(out, "*")
	}
	for _, p := range f.params {
		s := p.name + ": " + p.hint
		switch {
		case p.required:
		case p.def != "":
			s += " = " + p.def
		default:
			s += " = " + f.omit
		}
		out = append(out, s)
	}
	if f.varkw != "" {
		out = append(out, "**"+f.varkw+": Any")
	}
	return out
}

// signature returns the function's signature on one line, without "def",
// as a model reads it (search_tools, get_tool_definition, the dashboard):
// an optional argument, which is not sent when left out, shows its default
// as a stub does, "= ...", not as the module's sentinel.
func (f *function) signature() string {
	list := f.paramList()
	for i, p := range list {
		if rest, ok := strings.CutSuffix(p, " = "+f.omit); ok {
			list[i] = rest + " = ..."
		}
	}
	return f.ident + "(" + strings.Join(list, ", ") + ") -> Any"
}

// maxLine is the width past which the generated code breaks a line.
const maxLine = 88

// writeDef writes the def line of the function or its async variant,
// breaking it one parameter per line when it is long.
func (f *function) writeDef(b *strings.Builder, prefix, name string) {
	list := f.paramList()
	line := prefix + name + "(" + strings.Join(list, ", ") + ") -> Any:"
	if len(line) <= maxLine || len(list) == 0 {
		b.WriteString(line + "\n")
		return
	}
	b.WriteString(prefix + name + "(\n")
	for _, p := range list {
		b.WriteString("    " + p + ",\n")
	}
	b.WriteString(") -> Any:\n")
}

// writeReturn writes the body's one statement: the call with the arguments
// that were given. The arguments go one per line when the async variant's
// statement would be long, in both functions alike.
func (f *function) writeReturn(b *strings.Builder, async bool) {
	call := "return " + f.rpc + ".call("
	if async {
		call = "return await " + f.rpc + ".acall("
	}
	head := "    " + call + pyString(f.server) + ", " + pyString(f.tool.Name) + ", "
	if len(f.params) == 0 && f.varkw == "" {
		b.WriteString(head + "{})\n")
		return
	}
	entries := make([]string, len(f.params))
	for i, p := range f.params {
		entries[i] = pyString(p.key) + ": " + p.name
	}
	tail := "}))\n"
	if f.varkw != "" {
		tail = "}, " + f.varkw + "))\n"
	}
	line := head + f.args + "({" + strings.Join(entries, ", ") + tail
	long := len(line) - len(call) + len("return await "+f.rpc+".acall(")
	if long <= maxLine+1 || len(entries) == 0 {
		b.WriteString(line)
		return
	}
	b.WriteString(head + f.args + "({\n")
	for _, e := range entries {
		b.WriteString("        " + e + ",\n")
	}
	b.WriteString("    " + tail)
}

// summary is the first line of the function's docstring and of the index:
// the description's first sentence, else the title, else what it calls.
func (f *function) summary() string {
	if s := firstSentence(f.tool.Description); s != "" {
		return s
	}
	if s := oneLine(f.tool.Title); s != "" {
		return truncate(s, maxSentence)
	}
	return fmt.Sprintf("Calls the tool %s of the MCP server %s.", pyString(f.tool.Name), pyString(f.server))
}

// returnsDoc and raisesDoc say what a call returns and raises, for every
// tool alike.
const (
	returnsDoc = `Returns the tool's structured content when it has one, else its text
parsed as JSON when it parses, else the text; images as servers.Image.`
	raisesDoc = `Raises servers.ToolError when the tool reports an error.`
)

// writeDocstring writes the function's docstring: the description, the
// parameters, the result.
func (f *function) writeDocstring(b *strings.Builder) {
	desc := paragraph(f.tool.Description)
	if desc == "" {
		desc = f.summary()
	}
	b.WriteString(`    """` + indent(docText(desc), "    ") + "\n")
	if len(f.params) > 0 || f.varkw != "" {
		b.WriteString("\n    Args:\n")
	}
	for _, p := range f.params {
		name := p.name
		if p.name != p.key {
			name += " (" + pyString(p.key) + ")"
		}
		doc := paragraph(p.doc)
		if p.defDoc != "" {
			if doc != "" {
				doc += " "
			}
			doc += "(default " + p.defDoc + ")"
		}
		if doc == "" {
			doc = "(no description)"
		}
		b.WriteString("        " + docText(name) + ": " + indent(docText(doc), "            ") + "\n")
		b.WriteString(docText(fieldsDoc(p.schema, "            ", 1)))
	}
	switch {
	case f.varkw != "" && f.input.malformed:
		b.WriteString("        **" + f.varkw + ": the tool's arguments, sent as given (its input schema could not be read).\n")
	case f.varkw != "":
		b.WriteString("        **" + f.varkw + ": further arguments, sent as given.\n")
	}
	b.WriteString("\n    " + indent(returnsDoc, "    ") + "\n")
	if out := outputDoc(f.tool.OutputSchema); out != "" {
		b.WriteString("    " + docText(out) + "\n")
		b.WriteString(docText(outputFieldsDoc(f.tool.OutputSchema)))
	}
	b.WriteString("    " + raisesDoc + "\n")
	b.WriteString(`    """` + "\n")
}

// maxOutputFields bounds the structured content's fields the docstring
// lists.
const maxOutputFields = 20

// outputDoc describes the top-level fields of an output schema, or returns
// "" when it has none.
func outputDoc(raw json.RawMessage) string {
	o, ok := parseObject(raw)
	if !ok {
		return ""
	}
	props, ok := members(o.get("properties"))
	if !ok || len(props) == 0 {
		return ""
	}
	var fields []string
	for i, m := range props {
		if i == maxOutputFields {
			fields = append(fields, "…")
			break
		}
		fields = append(fields, oneLine(m.key)+": "+hint(m.val))
	}
	return "The structured content has the fields " + strings.Join(fields, ", ") + "."
}

// outputFieldsDoc describes the nested fields of each top-level field of an
// output schema that holds objects, or returns "".
func outputFieldsDoc(raw json.RawMessage) string {
	o, ok := parseObject(raw)
	if !ok {
		return ""
	}
	props, _ := members(o.get("properties"))
	var b strings.Builder
	for _, m := range props[:min(len(props), maxOutputFields)] {
		if sub := fieldsDoc(m.val, "        ", 1); sub != "" {
			b.WriteString("    " + oneLine(m.key) + ":\n" + sub)
		}
	}
	return b.String()
}

// source returns the tool's module.
func (f *function) source() string {
	var b strings.Builder
	// Source passes any server name as the module; Generate passes
	// identifiers only.
	b.WriteString(`"""` + docText(oneLine(f.module)+"."+f.ident+": "+f.summary()) + "\n\n")
	b.WriteString(docText(fmt.Sprintf("Tool %s of the MCP server %s, generated by codecell from its schema; do not edit.",
		pyString(oneLine(f.tool.Name)), pyString(oneLine(f.server)))))
	b.WriteString("\n\"\"\"\n\nfrom __future__ import annotations\n\n")

	typing := []string{"Any"}
	usesOmit, usesLiteral := false, false
	for _, p := range f.params {
		usesOmit = usesOmit || !p.required && p.def == ""
		usesLiteral = usesLiteral || strings.Contains(p.hint, "Literal[")
	}
	if usesLiteral {
		typing = append(typing, "Literal")
	}
	b.WriteString("from typing import " + strings.Join(typing, ", ") + "\n\n")
	b.WriteString("from codecell import " + alias("_rpc", f.rpc) + "\n")
	var helpers []string
	if usesOmit {
		helpers = append(helpers, alias("_OMIT", f.omit))
	}
	if len(f.params) > 0 || f.varkw != "" {
		helpers = append(helpers, alias("_args", f.args))
	}
	if len(helpers) > 0 {
		b.WriteString("from servers import " + strings.Join(helpers, ", ") + "\n")
	}
	fmt.Fprintf(&b, "\n__all__ = [%s, %s]\n\n\n", pyString(f.ident), pyString(f.async))

	f.writeDef(&b, "def ", f.ident)
	f.writeDocstring(&b)
	f.writeReturn(&b, false)
	b.WriteString("\n\n")
	f.writeDef(&b, "async def ", f.async)
	fmt.Fprintf(&b, "    \"\"\"Async variant of %s: same arguments, same result.\"\"\"\n", f.ident)
	f.writeReturn(&b, true)
	return b.String()
}

// alias returns an import of name as as.
func alias(name, as string) string {
	if name == as {
		return name
	}
	return name + " as " + as
}
