#!/usr/bin/env node
// Conformance checks of a running codecell with the official TypeScript MCP
// SDK clients of both protocol generations: @modelcontextprotocol/sdk 1.x
// (protocol 2025-11-25, MCP sessions; the client Claude Desktop, Claude Code
// and Cursor are built on) and @modelcontextprotocol/client 2.x pinned to
// the stateless revision 2026-07-28.
// codecell is written with the Go SDK, so a Go client would share its
// mistakes; this one does not. The SDK validates the initialize result, the
// tool list, each structuredContent against the tool's outputSchema and
// every resource result; the script adds the checks SPEC §4 asks of each
// tool, calling every listed tool with arguments that mean something.
//
// It lives beside package.json so that Node finds the pinned SDK in
// node_modules. cmd/codecell/conformance_test.go runs it; by hand:
//
//   node testdata/npm/conformance.mjs --stdio bin/codecell -- serve --config c.json --data-dir d
//   node testdata/npm/conformance.mjs --http http://127.0.0.1:8080/mcp
//   node testdata/npm/conformance.mjs --sdk v2 --http http://127.0.0.1:8080/mcp
//
// Flags:
//   --stdio CMD -- ARGS...  spawn CMD ARGS... and speak MCP over its stdio
//   --http URL              connect to a Streamable HTTP endpoint
//   --install REQUIREMENT   also configure a venv and install REQUIREMENT
//                           (from the server's wheelhouse), then check it
//   --upstream NAME         an upstream tool search_tools must find and
//                           get_tool_definition must define (default
//                           everything.echo); its server must connect
//   --timeout SECONDS       per request (default 180)
//   --token TOKEN           over HTTP, send Authorization: Bearer TOKEN (the
//                           token's namespace: two runs side by side on one
//                           server keep apart)
//   --sdk v1|v2             the client: v1 (default) is @modelcontextprotocol/sdk
//                           speaking 2025-11-25; v2 is @modelcontextprotocol/client
//                           pinned to 2026-07-28, and adds the revision's checks
//                           (handles across reconnects, x-mcp-header, ttlMs and
//                           cacheScope, resultType, the version error)
//
// The server's config must list every toolset ("toolsets": ["all"]). Each
// check prints PASS or FAIL with the reason; the script ends with a summary
// and exits 1 when any check failed, 2 on bad usage.

import { isDeepStrictEqual } from "node:util";

// The tools of SPEC §4 with every toolset listed. restore_pii is not here:
// it is listed only when the config allows restoring, and called if listed.
const SPEC_TOOLS = [
  "execute_code", "execute_code_file", "initialize_code_file", "append_to_code_file", "read_code_file",
  "list_sessions", "close_session",
  "search_tools", "get_tool_definition", "list_tool_categories",
  "write_workspace_file", "read_workspace_file", "list_workspace_files", "delete_workspace_file",
  "save_skill", "load_skill", "list_skills", "delete_skill",
  "install_dependencies", "check_installed_packages", "configure_environment", "get_environment_config",
  "sanitize_pii",
  "execute_analysis",
  "get_execution_stats",
];

const WORKSPACE_URI = "file:///workspace/";
const WORKSPACE_TEMPLATE = "file:///workspace/{+path}"; // RFC 6570 reserved expansion: a path keeps its slashes

function usage(msg) {
  process.stderr.write(`conformance: ${msg}\n` +
    "usage: conformance.mjs (--stdio CMD -- ARGS... | --http URL) [--sdk v1|v2] [--install REQ] [--upstream NAME] [--timeout SECONDS]\n");
  process.exit(2);
}

function parseArgs(argv) {
  const o = { upstream: "everything.echo", timeoutMs: 180_000, sdk: "v1", args: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    switch (a) {
      case "--stdio": o.command = next(); break;
      case "--http": o.url = next(); break;
      case "--install": o.install = next(); break;
      case "--upstream": o.upstream = next(); break;
      case "--timeout": o.timeoutMs = Number(next()) * 1000; break;
      case "--sdk": o.sdk = next(); break;
      case "--token": o.token = next(); break;
      case "--": o.args = argv.slice(i + 1); i = argv.length; break;
      default: usage(`unknown argument ${JSON.stringify(a)}`);
    }
  }
  if (!o.command === !o.url) usage("give exactly one of --stdio and --http");
  if (!(o.timeoutMs > 0)) usage("--timeout must be a positive number");
  if (o.sdk !== "v1" && o.sdk !== "v2") usage(`--sdk is v1 or v2, not ${JSON.stringify(o.sdk)}`);
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const transportName = `${opts.sdk}/${opts.url ? "http" : "stdio"}`;

// The revision the v2 client is pinned to.
const MODERN = "2026-07-28";

// sdk is what differs between the two clients: where they come from, how a
// client is made, and the shape of a few calls.
const sdk = opts.sdk === "v1" ? await sdkV1() : await sdkV2();

async function sdkV1() {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { ResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
  return {
    StdioClientTransport, StreamableHTTPClientTransport,
    newClient: () => new Client({ name: "codecell-conformance", version: "1.0.0" }),
    callTool: (c, params, options) => c.callTool(params, undefined, options),
    rawRequest: (c, req, options) => c.request(req, ResultSchema, options),
  };
}

async function sdkV2() {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  return {
    StdioClientTransport, StreamableHTTPClientTransport,
    newClient: () => new Client({ name: "codecell-conformance", version: "2.0.0" },
      { versionNegotiation: { mode: { pin: MODERN } } }),
    callTool: (c, params, options) => c.callTool(params, options),
    rawRequest: (c, req, options) => c.request(req, options),
  };
}

// Checks and their outcomes.
const results = [];

function record(name, ok, detail) {
  results.push({ name, ok, detail });
  process.stdout.write(`${ok ? "PASS" : "FAIL"} [${transportName}] ${name}${detail ? `: ${detail}` : ""}\n`);
}

// check runs fn as one named check: it passes unless fn throws. It returns
// fn's value, or undefined when the check failed, so that later checks that
// need the value can say so instead of failing obscurely.
async function check(name, fn) {
  try {
    const v = await fn();
    record(name, true);
    return v;
  } catch (err) {
    record(name, false, describe(err));
    return undefined;
  }
}

function describe(err) {
  if (err instanceof Error) {
    const code = err.code !== undefined ? ` (code ${err.code})` : "";
    return `${err.message}${code}`;
  }
  return String(err);
}

// describeListError renders the SDK's rejection of a tool list: its message
// is a JSON array of zod issues whose paths index the list, so each issue is
// shown with the name of the tool it is about, then the message as sent.
function describeListError(err, tools) {
  let issues;
  try {
    issues = JSON.parse(err.message);
  } catch {
    return describe(err);
  }
  if (!Array.isArray(issues)) return describe(err);
  const lines = issues.map((i) => {
    const path = [...(i.path ?? [])];
    let where = path.join(".");
    if (path[0] === "tools" && typeof path[1] === "number") {
      const name = tools?.[path[1]]?.name ?? `#${path[1]}`;
      where = `tool ${name}: ${path.slice(2).join(".")}`;
    }
    return `\n    ${where}: ${i.message} (${i.code})`;
  });
  return `the SDK rejects the list (ListToolsResultSchema):${lines.join("")}\n    as sent: ${JSON.stringify(issues)}`;
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function short(v, n = 300) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s === undefined ? "undefined" : s.length > n ? `${s.slice(0, n)}…` : s;
}

function textOf(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const client = sdk.newClient();
const requestOptions = { timeout: opts.timeoutMs, resetTimeoutOnProgress: true };

// Tools the script called, and the resource links their results carried.
const called = new Set();
const links = [];

// call calls a tool through the SDK, which validates structuredContent
// against the tool's outputSchema. Unless expectError, the result must not
// be an error and must carry structured content and a text rendering; with
// expectError it must be a tool error, not a protocol error. It returns the
// result, and throws for the check that wraps it.
async function call(name, args, { expectError = false } = {}) {
  called.add(name);
  const res = await sdk.callTool(client, { name, arguments: args }, requestOptions);
  for (const c of res.content ?? []) {
    if (c.type === "resource_link") links.push({ tool: name, link: c });
  }
  if (expectError) {
    assert(res.isError === true, `${name} should fail as a tool error (isError: true), got ${short(res)}`);
    assert(textOf(res) !== "", `${name}'s error result has no text saying what went wrong`);
    return res;
  }
  assert(!res.isError, `${name} returned isError: ${short(textOf(res)) || short(res)}`);
  assert(res.structuredContent && typeof res.structuredContent === "object",
    `${name} returned no structuredContent`);
  assert(textOf(res) !== "", `${name} returned no text content for hosts that show only text`);
  return res;
}

function sc(res) {
  return res.structuredContent;
}

async function connect(c = client) {
  let transport;
  if (opts.url) {
    transport = new sdk.StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: authHeader() } });
  } else {
    // The server's log goes to our stderr, next to the failures it explains.
    transport = new sdk.StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" });
  }
  await c.connect(transport, requestOptions);
  return transport;
}

// listAll pages through a list method.
async function listAll(method, key) {
  const out = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const res = await client[method](cursor ? { cursor } : undefined, requestOptions);
    out.push(...res[key]);
    cursor = res.nextCursor;
    if (!cursor) return out;
  }
  throw new Error(`${method} still had pages after 100`);
}

async function main() {
  const transport = await check("initialize", async () => {
    const t = await connect();
    const info = client.getServerVersion();
    assert(info?.name, `server reported no name: ${short(info)}`);
    return t;
  });
  if (!transport) return;
  if (opts.sdk === "v2") {
    await check(`the client speaks ${MODERN}`, () => {
      const v = client.getNegotiatedProtocolVersion();
      assert(v === MODERN, `negotiated ${short(v)}`);
    });
  }

  const caps = client.getServerCapabilities() ?? {};
  await check("server declares the tools capability", () => assert(caps.tools, `capabilities ${short(caps)}`));
  await check("server declares the resources capability", () => assert(caps.resources, `capabilities ${short(caps)}`));
  await check("server gives instructions", () =>
    assert((client.getInstructions() ?? "").trim() !== "", "initialize result has no instructions"));

  // tools/list: the SDK parses the list with its schema, which is what
  // rejects a tool whose schema a host cannot take.
  let tools;
  let listError;
  try {
    ({ tools } = await client.listTools(undefined, requestOptions));
  } catch (err) {
    listError = err;
  }
  if (!listError) {
    record("tools/list is accepted by the SDK client", true);
  } else {
    // Keep going with the list as sent, so that one bad schema does not hide
    // every other finding. The check fails and the run exits non-zero;
    // output validation still uses the SDK's own validators, compiled from
    // the unvalidated list.
    tools = await check("tools/list as sent (unvalidated, to run the remaining checks)", async () => {
      const raw = await sdk.rawRequest(client, { method: "tools/list", params: {} }, requestOptions);
      assert(Array.isArray(raw.tools), `no tools array in ${short(raw)}`);
      client.cacheToolMetadata(raw.tools);
      return raw.tools;
    });
    record("tools/list is accepted by the SDK client", false, describeListError(listError, tools));
    if (!tools) return;
  }
  const listed = new Map(tools.map((t) => [t.name, t]));
  // cacheToolMetadata and getToolOutputValidator are private in the SDK's
  // types but plain methods at run time; the SDK is pinned, so a change to
  // them shows here first.
  // (The v2 client compiles its validators from its cached tools/list when
  // it calls a tool; its callTool rejects a result that does not match.)
  if (opts.sdk === "v1") {
    await check("the SDK validates the structured results of every tool", () => {
      const unchecked = tools.filter((t) => !client.getToolOutputValidator(t.name)).map((t) => t.name);
      assert(unchecked.length === 0, `no output validator for ${unchecked.join(", ")}`);
    });
  }

  await check("every tool of SPEC §4 is listed", () => {
    const missing = SPEC_TOOLS.filter((n) => !listed.has(n));
    assert(missing.length === 0, `missing ${missing.join(", ")} (is "toolsets": ["all"] in the config?)`);
  });
  for (const t of tools) {
    await check(`tool ${t.name} has a description, typed input fields with descriptions and an output schema`, () => {
      assert((t.description ?? "").trim() !== "", "no description");
      assert(t.inputSchema?.type === "object", `inputSchema.type is ${short(t.inputSchema?.type)}`);
      for (const [field, s] of Object.entries(t.inputSchema.properties ?? {})) {
        assert(s && typeof s === "object", `input field ${field} has the schema ${short(s)}, not an object`);
        assert((s.description ?? "").trim() !== "", `input field ${field} has no description`);
      }
      assert(t.outputSchema?.type === "object", `outputSchema is ${short(t.outputSchema)}`);
    });
  }

  await discovery();
  await workspaceFiles();
  await codeFiles();
  await executeCode();
  await sessions();
  await analysis();
  await skills();
  await privacy(listed);
  await environments();
  await check("get_execution_stats counts the executions", async () => {
    const s = sc(await call("get_execution_stats", {}));
    assert(s.total >= 5 && s.ok >= 4 && s.failed >= 1, `totals ${short({ total: s.total, ok: s.ok, failed: s.failed })}`);
    assert(typeof s.isolation === "string" && s.isolation !== "", `isolation ${short(s.isolation)}`);
  });
  await check("get_execution_stats with since", async () => {
    const s = sc(await call("get_execution_stats", { since: "1h" }));
    assert(s.total >= 1, `total ${s.total}`);
  });

  await resourceLinks();
  if (opts.sdk === "v2") await modern(listed);

  await check("every listed tool was called", () => {
    const missed = [...listed.keys()].filter((n) => !called.has(n));
    assert(missed.length === 0, `not exercised by this script: ${missed.join(", ")} (add a call for each)`);
  });

  if (opts.url && opts.sdk === "v1") {
    await check("HTTP session ends cleanly", () => transport.terminateSession());
  }
  await check("close", () => client.close());
}

async function discovery() {
  const [server] = opts.upstream.split(".");
  await check(`list_tool_categories: upstream ${server} connects`, async () => {
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
      const s = sc(await call("list_tool_categories", {}));
      const mine = (s.servers ?? []).find((x) => x.name === server);
      assert(mine, `no server ${server} in ${short(s)}`);
      if (mine.state === "connected") {
        assert(mine.tool_count > 0, `${server} is connected with no tools`);
        return;
      }
      assert(mine.state === "starting", `${server} is ${mine.state}: ${mine.error ?? ""}`);
      assert(Date.now() < deadline, `${server} still starting`);
      await new Promise((r) => setTimeout(r, 500));
    }
  });
  await check(`search_tools finds ${opts.upstream}`, async () => {
    const tool = opts.upstream.split(".").slice(1).join(".");
    const s = sc(await call("search_tools", { query: tool.replace(/_/g, " "), server, limit: 5 }));
    assert(s.total >= 1 && s.tools.some((t) => t.name === opts.upstream), `results ${short(s.tools.map((t) => t.name))}`);
  });
  await check("search_tools with an empty query pages, at every detail level", async () => {
    for (const detail_level of ["name_only", "summary", "full"]) {
      const s = sc(await call("search_tools", { detail_level, limit: 2, offset: 1 }));
      assert(s.tools.length === 2 && s.total > 2, `${detail_level}: ${s.tools.length} of ${s.total}`);
    }
  });
  await check(`get_tool_definition ${opts.upstream}`, async () => {
    const s = sc(await call("get_tool_definition", { name: opts.upstream }));
    assert(s.name === opts.upstream, `name ${short(s.name)}`);
    assert(s.input_schema && typeof s.source === "string" && s.source.includes("def "), `definition ${short(s)}`);
  });
  await check("get_tool_definition of an unknown tool is a tool error", () =>
    call("get_tool_definition", { name: "nosuchserver.nosuchtool" }, { expectError: true }));
}

async function workspaceFiles() {
  const path = "conformance/hello.txt";
  const body = "hello from the TypeScript SDK\n";
  await check("write_workspace_file", async () => {
    const s = sc(await call("write_workspace_file", { path, content: body }));
    assert(JSON.stringify(s).includes(path), `result ${short(s)}`);
  });
  await check("read_workspace_file reads it back", async () => {
    const s = sc(await call("read_workspace_file", { path }));
    assert(s.content === body && s.encoding === "text" && s.size === body.length, `read ${short(s)}`);
  });
  await check("list_workspace_files lists it", async () => {
    const s = sc(await call("list_workspace_files", { path: "conformance", pattern: "*.txt" }));
    assert(s.files.some((f) => f.path === path && f.size === body.length), `files ${short(s.files)}`);
  });

  // The workspace's files are MCP resources (SPEC §4.4).
  const uri = WORKSPACE_URI + path;
  await check("resources/list lists the workspace file", async () => {
    const rs = await listAll("listResources", "resources");
    assert(rs.some((r) => r.uri === uri), `no ${uri} among ${short(rs.map((r) => r.uri))}`);
  });
  await check("resources/read reads the workspace file", async () => {
    const r = await client.readResource({ uri }, requestOptions);
    assert(r.contents.length === 1 && r.contents[0].uri === uri && r.contents[0].text === body, `contents ${short(r.contents)}`);
  });
  await check(`resources/templates/list has ${WORKSPACE_TEMPLATE}`, async () => {
    const ts = await listAll("listResourceTemplates", "resourceTemplates");
    assert(ts.some((t) => t.uriTemplate === WORKSPACE_TEMPLATE), `templates ${short(ts.map((t) => t.uriTemplate))}`);
  });
  await check("resources/read of a path outside the workspace is refused", async () => {
    let r;
    try {
      r = await client.readResource({ uri: WORKSPACE_URI + "../../etc/passwd" }, requestOptions);
    } catch {
      return; // a JSON-RPC error is the refusal
    }
    assert(!JSON.stringify(r).includes("root:"), `read ${short(r)}`);
  });

  await check("delete_workspace_file", async () => {
    const s = sc(await call("delete_workspace_file", { path }));
    assert(s.deleted === path, `deleted ${short(s)}`);
    const l = sc(await call("list_workspace_files", { path: "conformance" }));
    assert(!l.files.some((f) => f.path === path), `still listed: ${short(l.files)}`);
  });
  await check("read_workspace_file of a deleted file is a tool error", () =>
    call("read_workspace_file", { path }, { expectError: true }));
  await check("write_workspace_file refuses a path out of the workspace", () =>
    call("write_workspace_file", { path: "../escape.txt", content: "x" }, { expectError: true }));
}

async function codeFiles() {
  const filename = "conformance/cell.py";
  const path = await check("initialize_code_file", async () => {
    const s = sc(await call("initialize_code_file", { content: "import sys\nx = 40\n", filename }));
    assert(s.path === filename && s.lines >= 2, `file ${short(s)}`);
    return s.path;
  });
  if (!path) return;
  await check("append_to_code_file", async () => {
    const s = sc(await call("append_to_code_file", { path, content: "print(x + 2, sys.argv[1:])" }));
    assert(s.lines >= 3, `file ${short(s)}`);
  });
  await check("read_code_file", async () => {
    const s = sc(await call("read_code_file", { path }));
    assert(s.content.includes("x = 40") && s.content.includes("print(x + 2"), `content ${short(s.content)}`);
  });
  await check("execute_code_file runs it with args", async () => {
    const s = sc(await call("execute_code_file", { path, args: ["a", "b"] }));
    assert(s.ok && s.stdout === "42 ['a', 'b']\n", `stdout ${short(s.stdout)} error ${short(s.error)}`);
  });
}

async function executeCode() {
  await check("execute_code print(1)", async () => {
    const s = sc(await call("execute_code", { code: "print(1)" }));
    assert(s.ok === true && s.stdout === "1\n" && s.error === null, `result ${short(s)}`);
  });
  await check("execute_code returns result", async () => {
    const s = sc(await call("execute_code", { code: "result = {'sum': 1 + 2, 'items': [1, None, 'x']}" }));
    assert(isDeepStrictEqual(s.result, { sum: 3, items: [1, null, "x"] }), `result ${short(s.result)}`);
  });
  await check("execute_code returns the last expression, with context", async () => {
    const s = sc(await call("execute_code", { code: "n * 2", context: { n: 21 }, timeout_seconds: 30, language: "python" }));
    assert(s.result === 42, `result ${short(s.result)}`);
  });
  await check("execute_code returns a DataFrame as a table, its data valid to the output schema", async () => {
    const s = sc(await call("execute_code", { code: "import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'pop': [0.7, 10.5]})" }));
    assert(typeof s.result === "string" && s.result.startsWith("DataFrame: 2 rows x 2 columns\n"), `result ${short(s.result)}`);
    assert(isDeepStrictEqual(s.table, { columns: ["city", "pop"], index: [0, 1], data: [["Oslo", 0.7], ["Lima", 10.5]] }), `table ${short(s.table)}`);
  });
  await check("execute_code: an exception is a tool error with structured content", async () => {
    const res = await call("execute_code", { code: "1/0" }, { expectError: true });
    const s = sc(res);
    assert(s && s.ok === false && s.error?.type === "ZeroDivisionError", `result ${short(s)}`);
  });
  await check("execute_code calls an upstream tool", async () => {
    const [server, tool] = opts.upstream.split(".");
    const code = `from servers.${server} import ${tool}\n${tool}(message='conformance')`;
    const s = sc(await call("execute_code", { code }));
    assert(s.ok && JSON.stringify(s.result).includes("conformance") && s.tool_calls.count === 1,
      `result ${short(s.result)} error ${short(s.error)} tool_calls ${short(s.tool_calls)}`);
  });
  await check("execute_code reports the files it writes as resource links", async () => {
    const code = "import os\nos.makedirs('conformance', exist_ok=True)\n" +
      "open('conformance/rows.csv', 'w').write('city,amount\\nParis,3\\nLyon,4\\nParis,5\\n')";
    const res = await call("execute_code", { code });
    const s = sc(res);
    assert(s.files.includes("conformance/rows.csv"), `files ${short(s.files)}`);
    const link = res.content.find((c) => c.type === "resource_link" && c.uri === WORKSPACE_URI + "conformance/rows.csv");
    assert(link, `no resource link to it in ${short(res.content)}`);
  });
}

async function sessions() {
  const id = "conformance-session";
  await check("execute_code in a session keeps globals", async () => {
    await call("execute_code", { code: "counter = 1", session_id: id });
    const s = sc(await call("execute_code", { code: "counter + 1", session_id: id }));
    assert(s.result === 2 && s.session_id === id, `result ${short(s)}`);
  });
  await check("list_sessions lists it", async () => {
    const s = sc(await call("list_sessions", {}));
    assert(s.sessions.some((x) => x.session_id === id), `sessions ${short(s.sessions)}`);
  });
  await check("close_session", async () => {
    const s = sc(await call("close_session", { session_id: id }));
    assert(s.closed === id, `closed ${short(s)}`);
    const l = sc(await call("list_sessions", {}));
    assert(!l.sessions.some((x) => x.session_id === id), `still listed: ${short(l.sessions)}`);
  });
}

async function analysis() {
  const data = [
    { city: "Paris", amount: 3 }, { city: "Lyon", amount: 4 }, { city: "Paris", amount: 5 },
  ];
  await check("execute_analysis aggregate on inline data", async () => {
    const s = sc(await call("execute_analysis", {
      analysis_type: "aggregate", data,
      parameters: { group_by: ["city"], metrics: [{ field: "amount", op: "sum" }, { op: "count" }] },
    }));
    const paris = s.result.find((r) => r.city === "Paris");
    assert(paris?.sum_amount === 8 && paris?.count === 2 && s.stats.rows_in === 3 && s.stats.rows_out === 2,
      `result ${short(s)}`);
  });
  await check("execute_analysis filter on a workspace CSV", async () => {
    const s = sc(await call("execute_analysis", {
      analysis_type: "filter", source: "conformance/rows.csv",
      parameters: { conditions: [{ field: "amount", operator: ">", value: 3 }] },
    }));
    assert(s.result.length === 2 && s.stats.rows_in === 3, `result ${short(s)}`);
  });
  await check("execute_analysis validate", async () => {
    const s = sc(await call("execute_analysis", {
      analysis_type: "validate", data,
      parameters: { rules: [{ field: "amount", rule: "max", value: 4 }] },
    }));
    assert(s.result.valid === false && s.result.violations.length === 1 && s.result.violations[0].row === 2,
      `result ${short(s.result)}`);
  });
  await check("execute_analysis with an unknown analysis_type is a tool error", () =>
    call("execute_analysis", { analysis_type: "nonsense", data }, { expectError: true }));
}

async function skills() {
  const name = "conformance_double";
  const code = "def double(x):\n    return 2 * x\n";
  await check("save_skill", async () => {
    const s = sc(await call("save_skill", { name, code, description: "Doubles a number.", tags: ["conformance"] }));
    assert(s.name === name && s.version === 1, `saved ${short(s)}`);
  });
  await check("load_skill", async () => {
    const s = sc(await call("load_skill", { name }));
    assert(s.code === code && s.version === 1 && s.tags.includes("conformance"), `loaded ${short(s)}`);
  });
  await check("list_skills finds it", async () => {
    const s = sc(await call("list_skills", { query: "conformance" }));
    assert(s.skills.some((k) => k.name === name), `skills ${short(s.skills)}`);
  });
  await check("execute_code imports the skill", async () => {
    const s = sc(await call("execute_code", { code: `from skills.${name} import double\ndouble(21)` }));
    assert(s.result === 42, `result ${short(s.result)} error ${short(s.error)}`);
  });
  await check("delete_skill", async () => {
    const s = sc(await call("delete_skill", { name }));
    assert(s.name === name && s.versions === 1, `deleted ${short(s)}`);
    const l = sc(await call("list_skills", {}));
    assert(!l.skills.some((k) => k.name === name), `still listed: ${short(l.skills)}`);
  });
  await check("save_skill with code that does not compile is a tool error", () =>
    call("save_skill", { name, code: "def (", description: "broken" }, { expectError: true }));
}

async function privacy(listed) {
  const original = "Write to ada.lovelace@example.com today.";
  const sanitized = await check("sanitize_pii", async () => {
    const s = sc(await call("sanitize_pii", { text: original }));
    assert(!s.text.includes("ada.lovelace@example.com") && /\[EMAIL_[0-9a-f]{6,}\]/.test(s.text), `text ${short(s.text)}`);
    assert(Object.values(s.counts).reduce((a, b) => a + b, 0) === 1, `counts ${short(s.counts)}`);
    return s.text;
  });
  if (listed.has("restore_pii") && sanitized) {
    await check("restore_pii", async () => {
      const s = sc(await call("restore_pii", { text: sanitized }));
      assert(s.text === original, `text ${short(s.text)}`);
    });
  }
}

async function environments() {
  await check("get_environment_config", async () => {
    const s = sc(await call("get_environment_config", {}));
    assert(s.type === "system" && s.python, `config ${short(s)}`);
  });
  await check("configure_environment system", async () => {
    const s = sc(await call("configure_environment", { type: "system" }));
    assert(s.type === "system", `config ${short(s)}`);
  });
  await check("configure_environment with an unknown type is a tool error", () =>
    call("configure_environment", { type: "nonsense" }, { expectError: true }));
  await check("check_installed_packages", async () => {
    const s = sc(await call("check_installed_packages", { packages: ["no-such-package-conformance"] }));
    assert(s.packages.length === 1 && s.packages[0].installed === false, `packages ${short(s.packages)}`);
  });
  const req = opts.install ?? "requests";
  await check("install_dependencies into the system environment is a tool error", async () => {
    const res = await call("install_dependencies", { packages: [req] }, { expectError: true });
    assert(textOf(res).includes("configure_environment"), `text ${short(textOf(res))}`);
  });
  if (!opts.install) return;
  const name = opts.install.split(/[=<>!~\[ ;]/)[0];
  await check("configure_environment venv", async () => {
    const s = sc(await call("configure_environment", { type: "venv" }));
    assert(s.type === "venv" && s.managed === true, `config ${short(s)}`);
  });
  await check(`install_dependencies ${opts.install}`, async () => {
    const s = sc(await call("install_dependencies", { packages: [opts.install] }));
    assert(s.results.length === 1 && s.results[0].ok && s.installed.some((p) => p.name === name && p.installed),
      `result ${short(s)}`);
  });
  await check(`check_installed_packages ${name}`, async () => {
    const s = sc(await call("check_installed_packages", { packages: [name] }));
    assert(s.packages[0].installed === true && s.packages[0].version, `packages ${short(s.packages)}`);
  });
  await check("execute_code imports the installed package", async () => {
    const s = sc(await call("execute_code", { code: `import ${name}` }));
    assert(s.ok, `error ${short(s.error)}`);
  });
}

// resourceLinks reads every resource link a tool result carried.
async function resourceLinks() {
  await check("tool results carried resource links", () => assert(links.length > 0, "none"));
  for (const { tool, link } of links) {
    await check(`resources/read of ${link.uri} (linked by ${tool})`, async () => {
      assert(link.uri.startsWith(WORKSPACE_URI), `not a workspace URI`);
      const r = await client.readResource({ uri: link.uri }, requestOptions);
      assert(r.contents.length >= 1 && r.contents[0].uri === link.uri, `contents ${short(r.contents)}`);
      const c = r.contents[0];
      const size = c.text !== undefined ? Buffer.byteLength(c.text) : Buffer.from(c.blob ?? "", "base64").length;
      assert(link.size === undefined || link.size === size, `link says ${link.size} bytes, read ${size}`);
    });
  }
}

// modern checks what the revision 2026-07-28 asks beyond the tools' own
// behaviour: state behind handles (session_id), not connections; the
// handle mirrored into a header a balancer can route on; cacheable,
// deterministic lists; progress on the request's own stream; and, over
// HTTP, the wire itself (resultType, no Mcp-Session-Id, the version error,
// a header that disagrees with the body).
async function modern(listed) {
  await check("tools/list is cacheable (ttlMs, cacheScope) and in the same order every time", async () => {
    const a = await client.listTools(undefined, { ...requestOptions, cacheMode: "bypass" });
    const b = await client.listTools(undefined, { ...requestOptions, cacheMode: "bypass" });
    assert(typeof a.ttlMs === "number" && a.ttlMs > 0, `ttlMs ${short(a.ttlMs)}`);
    assert(a.cacheScope === "public" || a.cacheScope === "private", `cacheScope ${short(a.cacheScope)}`);
    const names = (r) => r.tools.map((t) => t.name);
    assert(isDeepStrictEqual(names(a), names(b)), `two lists differ: ${short(names(a))} and ${short(names(b))}`);
    assert(isDeepStrictEqual(names(a), [...names(a)].sort()), `not sorted: ${short(names(a))}`);
  });
  await check("resources/list is private to the caller and in the same order every time", async () => {
    const a = await client.listResources(undefined, { ...requestOptions, cacheMode: "bypass" });
    const b = await client.listResources(undefined, { ...requestOptions, cacheMode: "bypass" });
    assert(a.cacheScope === "private", `cacheScope ${short(a.cacheScope)}`);
    assert(isDeepStrictEqual(a.resources.map((r) => r.uri), b.resources.map((r) => r.uri)), "two lists differ");
  });
  await check("session_id is mirrored into Mcp-Param-Session-Id (x-mcp-header) for balancers", () => {
    for (const name of ["execute_code", "execute_code_file", "close_session"]) {
      const p = listed.get(name)?.inputSchema?.properties?.session_id;
      assert(p?.["x-mcp-header"] === "Session-Id", `${name}.session_id is ${short(p)}`);
    }
  });
  await check("progress comes on the request's own stream", async () => {
    const seen = [];
    const code = "import time\nfor i in range(4):\n    print('step', i, flush=True)\n    time.sleep(0.4)";
    called.add("execute_code");
    const res = await sdk.callTool(client, { name: "execute_code", arguments: { code } },
      { ...requestOptions, onprogress: (p) => seen.push(p) });
    assert(!res.isError && res.structuredContent.stdout.includes("step 3"), `result ${short(res)}`);
    assert(seen.length >= 1, "no progress notification");
    assert(seen.some((p) => (p.message ?? "").includes("step")), `no output in ${short(seen)}`);
  });
  if (!opts.url) return;

  await check("an interpreter session lives on across reconnects (a new client per call)", async () => {
    const id = "conformance-reconnect";
    const counter = "try:\n    n += 1\nexcept NameError:\n    n = 1\nn";
    for (let k = 1; k <= 3; k++) {
      const c = sdk.newClient();
      await connect(c);
      try {
        // As a host does, to show the tools to its model: the listed schema
        // is what tells the client to mirror session_id into a header.
        await c.listTools(undefined, requestOptions);
        const res = await sdk.callTool(c, { name: "execute_code", arguments: { code: counter, session_id: id } }, requestOptions);
        const s = res.structuredContent;
        assert(s.result === k && s.session_started === (k === 1 ? true : undefined),
          `call ${k} on a new connection: result ${short(s.result)}, session_started ${short(s.session_started)}`);
      } finally {
        await c.close();
      }
    }
    sc(await call("close_session", { session_id: id }));
  });

  const meta = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": { name: "codecell-conformance-raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {},
  };
  await check("over the wire: a result says resultType, and no Mcp-Session-Id is handed out", async () => {
    const { status, headers, messages } = await post({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: meta } },
      { "Mcp-Protocol-Version": MODERN, "Mcp-Method": "tools/list" });
    assert(status === 200, `status ${status}: ${short(messages)}`);
    const r = messages.find((m) => m.id === 1)?.result;
    assert(r?.resultType === "complete", `resultType ${short(r?.resultType)}`);
    assert(typeof r.ttlMs === "number" && typeof r.cacheScope === "string", `ttlMs ${short(r.ttlMs)} cacheScope ${short(r.cacheScope)}`);
    assert(!headers.get("mcp-session-id"), `Mcp-Session-Id ${headers.get("mcp-session-id")}`);
  });
  await check("over the wire: an unknown revision gets UnsupportedProtocolVersion with the versions spoken", async () => {
    const v = "2099-01-01";
    const { messages } = await post({ jsonrpc: "2.0", id: 2, method: "tools/list",
      params: { _meta: { ...meta, "io.modelcontextprotocol/protocolVersion": v } } },
    { "Mcp-Protocol-Version": v, "Mcp-Method": "tools/list" });
    const e = messages.find((m) => m.id === 2)?.error;
    assert(e?.code === -32022, `error ${short(e)} in ${short(messages)}`);
    const supported = e.data?.supported ?? [];
    assert(supported.includes(MODERN) && supported.includes("2025-11-25"), `supported ${short(supported)}`);
  });
  await check("over the wire: Mcp-Param-Session-Id that disagrees with the body is refused", async () => {
    const body = { jsonrpc: "2.0", id: 3, method: "tools/call",
      params: { name: "list_sessions", arguments: {}, _meta: meta } };
    body.params.name = "close_session";
    body.params.arguments = { session_id: "one" };
    const { status, messages } = await post(body, { "Mcp-Protocol-Version": MODERN, "Mcp-Method": "tools/call",
      "Mcp-Name": "close_session", "Mcp-Param-Session-Id": "another" });
    const e = messages.find((m) => m.id === 3)?.error;
    assert(status === 400 && e, `status ${status}, ${short(messages)}`);
  });
}

// authHeader is the Authorization header of --token, if any.
function authHeader() {
  return opts.token ? { Authorization: `Bearer ${opts.token}` } : {};
}

// post sends one JSON-RPC message to the HTTP endpoint as a 2026 client
// would, and returns the status, the headers and the messages of the answer
// (JSON or an event stream).
async function post(body, headers) {
  const res = await fetch(opts.url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...authHeader(), ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let messages = [];
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    messages = text.split("\n").filter((l) => l.startsWith("data:")).map((l) => JSON.parse(l.slice(5)));
  } else if (text.trim().startsWith("{")) {
    messages = [JSON.parse(text)];
  } else {
    messages = [{ text }];
  }
  return { status: res.status, headers: res.headers, messages };
}

try {
  await main();
} catch (err) {
  record("the run", false, `stopped: ${err?.stack ?? err}`);
}
try {
  await client.close();
} catch {
  // closed already, or never connected
}
const failed = results.filter((r) => !r.ok);
process.stdout.write(`\n[${transportName}] ${results.length - failed.length} of ${results.length} checks passed\n`);
if (failed.length > 0) {
  // The details are above, with each FAIL line.
  process.stdout.write(`[${transportName}] FAILED:\n${failed.map((r) => `  - ${r.name}`).join("\n")}\n`);
  process.exitCode = 1;
}
