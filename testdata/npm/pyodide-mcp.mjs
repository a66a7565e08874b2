#!/usr/bin/env node
// A warm Pyodide behind an MCP server over stdio: the peer of issue 16's
// live-session figure. It stands for the engine of pydantic's
// mcp-run-python (Pyodide under Deno, one `run_python_code` tool) and does
// the work that server does on each call, no less and no more: it runs the
// code in one interpreter loaded at start, with a fresh globals dict whose
// __name__ is "__main__", collects stdout and stderr line by line through
// Pyodide's callbacks, flushes sys.stdout and sys.stderr, turns the value of
// the last expression into JSON (a string as it is) and answers with one
// text block:
//
//   <status>success</status>
//   <output>
//   1
//   </output>
//   <return_value>
//   ...
//   </return_value>
//
// A failed run answers <status>run-error</status> with an <error> block
// (the traceback), as mcp-run-python does, not an MCP tool error. What it
// leaves out: mcp-run-python also loads micropip and pydantic at start and
// can install packages; here nothing is loaded from the network (Pyodide
// comes from node_modules), so the value is written with json rather than
// pydantic_core, which for print(1) (value None) does nothing either way.
// Its argument is {code} rather than mcp-run-python's {python_code,
// global_variables}.
//
// `codecell bench --pyodide testdata/npm/pyodide-mcp.mjs` runs it beside
// codecell's live session; by hand:
//
//   node testdata/npm/pyodide-mcp.mjs
//
// It lives beside package.json so that Node finds the pinned SDK and
// Pyodide in node_modules.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { loadPyodide } from "pyodide";
import { z } from "zod";

// The prelude defines the value's JSON form, as mcp-run-python's dump_json
// does (a string as it is, anything json cannot write as its repr), and
// lowers the recursion limit as its prepare_env does.
const PRELUDE = `
import json as _json
import sys as _sys

_sys.setrecursionlimit(400)

def _dump_json(value):
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return _json.dumps(value, indent=2, default=repr)

_dump_json
`;

let output = [];
const pyodide = await loadPyodide({
  stdout: (line) => output.push(line),
  stderr: (line) => output.push(line),
});
const dumpJSON = await pyodide.runPythonAsync(PRELUDE);

function takeOutput(sys) {
  sys.stdout.flush();
  sys.stderr.flush();
  const out = output;
  output = [];
  return out;
}

// escapeClosing keeps text from closing its own tag early.
function escapeClosing(tag, text) {
  return text.replace(new RegExp(`</?\\s*${tag}(?:.*?>)?`, "gi"), (m) => m.replace(/</g, "&lt;").replace(/>/g, "&gt;"));
}

function asXML(status, out, value, error) {
  const xml = [`<status>${status}</status>`];
  if (out.length) {
    xml.push("<output>", ...out.map((l) => escapeClosing("output", l)), "</output>");
  }
  if (status === "success") {
    if (value) xml.push("<return_value>", escapeClosing("return_value", value), "</return_value>");
  } else {
    xml.push("<error>", escapeClosing("error", error), "</error>");
  }
  return xml.join("\n");
}

// formatError drops Pyodide's own frames from a traceback.
function formatError(err) {
  return String(err)
    .replace(/^PythonError: +/, "")
    .replace(/ {2}File "\/lib\/python\d+\.zip\/_pyodide\/.*\n {4}.*\n(?: {4}.*\n)*/g, "");
}

async function run(code) {
  const sys = pyodide.pyimport("sys");
  const globals = pyodide.toPy({ __name__: "__main__" });
  try {
    const raw = await pyodide.runPythonAsync(code, { globals, filename: "main.py" });
    const value = dumpJSON(raw);
    raw?.destroy?.();
    return asXML("success", takeOutput(sys), value ?? null);
  } catch (err) {
    return asXML("run-error", takeOutput(sys), null, formatError(err));
  } finally {
    globals.destroy();
    sys.destroy();
  }
}

const server = new McpServer({ name: "pyodide-mcp", version: pyodide.version });
server.registerTool(
  "run_python_code",
  {
    title: "Run Python code",
    description: "Run Python code in a warm Pyodide interpreter and return its stdout, stderr and the value of its last line.",
    inputSchema: { code: z.string().describe("Python code to run") },
  },
  async ({ code }) => ({ content: [{ type: "text", text: await run(code) }] }),
);
await server.connect(new StdioServerTransport());
