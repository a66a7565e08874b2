#!/usr/bin/env node
// Client-side checks of codecell's MCP Tasks and approvals, with clients
// codecell did not write, from the specifications alone:
//
//   - the 2026-07-28 tasks extension (SEP-2663, io.modelcontextprotocol/tasks)
//     and multi round-trip requests (SEP-2322, input_required), through
//     @modelcontextprotocol/client 2.x pinned to 2026-07-28 and
//     @modelcontextprotocol/ext-tasks (rawDispatch, v2RequestFraming);
//   - the 2025-11-25 experimental tasks (tasks capability, task param,
//     tasks/get, tasks/result, tasks/list, tasks/cancel), through
//     @modelcontextprotocol/sdk 1.x's own experimental API
//     (client.experimental.tasks) and through ext-tasks on a 2.x client in
//     the legacy era;
//   - approvals of upstream tool calls (policy.approve): an elicitation in
//     form mode (elicitation/create for 2025 clients, input_required for
//     2026 clients, and input_required inside a task answered with
//     tasks/update).
//
// It prints one JSON line per check:
//   {"scenario": ..., "client": ..., "transport": ..., "check": ..., "ok": true|false, "detail": ..., "data": ...}
// and, for each scenario that ran to its end, a line with the check
// "scenario ran to the end". It exits 1 when a check failed, 2 on bad usage.
// cmd/codecell/tasks_e2e_test.go runs it; by hand:
//
//   node testdata/npm/tasks.mjs long --client v2 --seconds 600 --timeout-seconds 900 --http http://127.0.0.1:8080/mcp
//   node testdata/npm/tasks.mjs long,compare,cancel --client v1 --stdio bin/codecell -- serve --config c.json
//
// Scenarios (a comma-separated list runs each in turn):
//   long        code printing a line every 0.5 s for --seconds completes as a
//               task while the client polls; while working, statusMessage
//               carries the latest lines
//   compare     the same 3 s code as a task and synchronously (a client that
//               does not declare tasks): the same stdout, result and ok
//   cancel      a task cancelled mid-run ends cancelled, stays so, and a
//               following execute_code works
//   reconnect   a new client (new connection) fetches the task by id and
//               gets its result
//   start       starts a task, prints its id (data.taskId) and leaves it running
//   resume      (a new process) fetches --task-id and gets its result
//   namespaces  over HTTP with --token and --token2: the other token's
//               tasks/get and tasks/cancel of the id fail, and the task is
//               untouched
//   approve-all          50 calls of a gated tool, accept with allow_all: one
//                        question, 50 calls ran
//   approve-decline      decline, then cancel: the code catches
//                        servers.ApprovalDenied and nothing ran
//   approve-none         a client without the elicitation capability: the
//                        call raises ApprovalDenied saying the client cannot
//                        approve
//   approve-task         (--client v2) the approval arrives inside a task as
//                        input_required, answered with tasks/update
//   approve-destructive  with policy.approveDestructive: only the destructive
//                        tool asks
//
// Flags:
//   --client v2|v1|v1ext   v2: @modelcontextprotocol/client pinned to 2026-07-28
//                          with ext-tasks; v1: @modelcontextprotocol/sdk 1.x
//                          (2025-11-25) and its experimental tasks API; v1ext:
//                          ext-tasks on @modelcontextprotocol/client in the
//                          2025-11-25 era
//   --stdio CMD -- ARGS    spawn CMD ARGS for each connection
//   --http URL             a Streamable HTTP endpoint
//   --token T, --token2 T  bearer tokens (two namespaces)
//   --seconds N            how long the long code runs (default 6)
//   --timeout-seconds T    execute_code's timeout_seconds for task runs
//                          (default N + 60)
//   --max-timeout M        the server's sandbox.maxTimeout in seconds: with
//                          --client v2 and T > M, a client that does not
//                          declare tasks must be refused T
//   --task-id ID           for resume
//   --upstream NAME        the upstream server of the approval scenarios
//                          (default memory: @modelcontextprotocol/server-memory)
//   --timeout SECONDS      per request (default 120)

import { isDeepStrictEqual } from "node:util";
import { randomBytes } from "node:crypto";

const MODERN = "2026-07-28";
const TASKS_EXT = "io.modelcontextprotocol/tasks";
const SCENARIOS = ["long", "compare", "cancel", "reconnect", "start", "resume", "namespaces",
  "approve-all", "approve-decline", "approve-none", "approve-task", "approve-destructive"];

function usage(msg) {
  process.stderr.write(`tasks: ${msg}\nusage: tasks.mjs SCENARIO[,SCENARIO...] [--client v2|v1|v1ext] (--stdio CMD -- ARGS... | --http URL) [flags]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { client: "v2", seconds: 6, timeoutMs: 120_000, upstream: "memory", args: [] };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => (i + 1 < argv.length ? argv[++i] : usage(`${a} needs a value`));
    switch (a) {
      case "--client": o.client = next(); break;
      case "--stdio": o.command = next(); break;
      case "--http": o.url = next(); break;
      case "--token": o.token = next(); break;
      case "--token2": o.token2 = next(); break;
      case "--seconds": o.seconds = Number(next()); break;
      case "--timeout-seconds": o.timeoutSeconds = Number(next()); break;
      case "--max-timeout": o.maxTimeout = Number(next()); break;
      case "--task-id": o.taskId = next(); break;
      case "--upstream": o.upstream = next(); break;
      case "--timeout": o.timeoutMs = Number(next()) * 1000; break;
      case "--": o.args = argv.slice(i + 1); i = argv.length; break;
      default:
        if (a.startsWith("--")) usage(`unknown flag ${JSON.stringify(a)}`);
        rest.push(a);
    }
  }
  if (rest.length !== 1) usage("give one scenario (or a comma-separated list)");
  o.scenarios = rest[0].split(",").filter(Boolean);
  for (const s of o.scenarios) if (!SCENARIOS.includes(s)) usage(`unknown scenario ${JSON.stringify(s)}`);
  if (!o.command === !o.url) usage("give exactly one of --stdio and --http");
  if (!["v1", "v2", "v1ext"].includes(o.client)) usage(`--client is v2, v1 or v1ext, not ${JSON.stringify(o.client)}`);
  if (!(o.seconds > 0)) usage("--seconds must be positive");
  if (!(o.timeoutMs > 0)) usage("--timeout must be positive");
  o.timeoutSeconds ??= Math.ceil(o.seconds) + 60;
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const transportName = opts.url ? "http" : "stdio";
const requestOptions = { timeout: opts.timeoutMs };

// ---------------------------------------------------------------------------
// Findings

let scenario = "";
let failures = 0;

function emit(check, ok, detail, data) {
  if (!ok) failures++;
  const line = { scenario, client: opts.client, transport: transportName, check, ok };
  if (detail !== undefined && detail !== "") line.detail = detail;
  if (data !== undefined) line.data = data;
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

// check runs fn as one named check: it passes unless fn throws. It returns
// fn's value, or undefined when it failed.
async function check(name, fn) {
  try {
    const v = await fn();
    emit(name, true);
    return v;
  } catch (err) {
    emit(name, false, describe(err));
    return undefined;
  }
}

// need is check for a value later steps cannot do without: it throws to
// stop the scenario when the check failed.
async function need(name, fn) {
  let failed;
  const v = await check(name, async () => {
    try {
      return await fn();
    } catch (err) {
      failed = err;
      throw err;
    }
  });
  if (failed) throw new Stop(name);
  return v;
}

class Stop extends Error {}

function describe(err) {
  if (err instanceof Error) {
    const code = err.code !== undefined ? ` (code ${err.code})` : "";
    const cause = err.cause instanceof Error ? `; cause: ${err.cause.message}` : "";
    return `${err.message}${code}${cause}`;
  }
  return short(err);
}

function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

function short(v, n = 600) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s === undefined ? "undefined" : s.length > n ? `${s.slice(0, n)}…` : s;
}

function textOf(res) {
  return (res?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function tag() {
  // Letters only: nothing the PII filter could take for personal data.
  return [...randomBytes(8)].map((b) => String.fromCharCode(97 + (b % 26))).join("");
}

// ---------------------------------------------------------------------------
// The code the scenarios run

// tickCode prints "tick i" every half second for seconds s; its result is
// the number of lines.
function tickCode(s) {
  const n = Math.max(1, Math.round(s * 2));
  return `import time\nn = ${n}\nfor i in range(n):\n    print(f"tick {i}", flush=True)\n    time.sleep(0.5)\nresult = n`;
}

function tickLines(s) {
  const n = Math.max(1, Math.round(s * 2));
  return Array.from({ length: n }, (_, i) => `tick ${i}\n`).join("");
}

function execArgs(code, timeoutSeconds) {
  const a = { code };
  if (timeoutSeconds !== undefined) a.timeout_seconds = timeoutSeconds;
  return a;
}

// ---------------------------------------------------------------------------
// Clients

function authHeaders(token) {
  return token ? { Authorization: `Bearer ${token}` } : {};
}

const INFO_V1 = { name: "codecell-tasks-v1", version: "1.0.0" };
const INFO_V2 = { name: "codecell-tasks-v2", version: "2.0.0" };

// connectV1 is an @modelcontextprotocol/sdk 1.x client (2025-11-25). With
// elicit, it declares form elicitation and answers elicitation/create.
async function connectV1({ token = opts.token, elicit } = {}) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  const client = new Client(INFO_V1, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => elicit(req.params, { via: "elicitation/create" }));
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: authHeaders(token) } })
    : new StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" });
  await client.connect(transport, requestOptions);
  // As a host does, to show the tools to its model; the SDK also compiles
  // the output validators and learns execute_code's taskSupport from it.
  await client.listTools(undefined, requestOptions);
  return { kind: "v1", client, transport, close: () => client.close() };
}

// connect2 is an @modelcontextprotocol/client 2.x client, pinned to
// 2026-07-28 (modern) or in the default legacy era (2025-11-25). With
// elicit, it declares form elicitation and answers it: as elicitation/create
// in the legacy era, as input_required rounds (fulfilled through the same
// handler) in the modern one.
async function connect2({ modern = true, token = opts.token, elicit, capabilities } = {}) {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport } = await import("@modelcontextprotocol/client/stdio");
  const caps = capabilities ?? (elicit ? { elicitation: { form: {} } } : {});
  const client = new Client(INFO_V2, {
    capabilities: caps,
    ...(modern ? { versionNegotiation: { mode: { pin: MODERN } } } : {}),
  });
  if (elicit) client.setRequestHandler("elicitation/create", async (req) => elicit(req.params, { via: modern ? "input_required" : "elicitation/create" }));
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: authHeaders(token) } })
    : new StdioClientTransport({ command: opts.command, args: opts.args, stderr: "inherit" });
  await client.connect(transport, requestOptions);
  await client.listTools(undefined, requestOptions);
  return { kind: modern ? "v2" : "v1ext", client, transport, caps, close: () => client.close() };
}

// rawCoordinator is the host-owned request coordinator ext-tasks asks for
// (rawDispatch): the 2.x Client's own codecs reject the 2026 task wire
// shapes (resultType "task" on tools/call, tasks/*), so these requests go
// through the client's transport with ids of their own, and their responses
// are taken off the transport before the Client sees them. Everything else
// goes to the Client as before.
function rawCoordinator(transport) {
  const pending = new Map();
  let seq = 0;
  const clientOnMessage = transport.onmessage;
  assert(typeof clientOnMessage === "function", "the connected transport has no message handler to wrap");
  transport.onmessage = (message, extra) => {
    if (message && typeof message.id === "string" && pending.has(message.id) && ("result" in message || "error" in message)) {
      const p = pending.get(message.id);
      pending.delete(message.id);
      p.resolve(message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result });
      return;
    }
    clientOnMessage.call(transport, message, extra);
  };
  return async (request, options = {}) => {
    const id = `codecell-tasks-raw-${++seq}`;
    const timeoutMs = options.context?.requestTimeoutMs ?? opts.timeoutMs;
    let timer;
    let onAbort;
    const answered = new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject });
      timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${request.method}: no response within ${timeoutMs} ms`));
      }, timeoutMs);
      if (options.signal) {
        onAbort = () => {
          pending.delete(id);
          reject(options.signal.reason ?? new Error("aborted"));
        };
        if (options.signal.aborted) onAbort();
        else options.signal.addEventListener("abort", onAbort, { once: true });
      }
    });
    try {
      try {
        await transport.send({ jsonrpc: "2.0", id, ...request }, {
          ...(options.context?.headers ? { headers: options.context.headers } : {}),
          ...(options.signal ? { requestSignal: options.signal } : {}),
        });
      } catch (err) {
        // Over HTTP a JSON-RPC error may come with a 4xx status, which the
        // transport throws with the body; that body is the answer.
        let body;
        try {
          body = JSON.parse(err?.data?.text ?? "");
        } catch {
          throw err;
        }
        if (body?.id === id && body.error) return { kind: "error", error: body.error };
        throw err;
      }
      return await answered;
    } finally {
      clearTimeout(timer);
      pending.delete(id);
      if (onAbort) options.signal?.removeEventListener("abort", onAbort);
    }
  };
}

// endpointId names the server and namespace for ext-tasks' task references.
function endpointId(token) {
  return `codecell:${opts.url ?? `stdio:${opts.command}`}:${token ?? "-"}`;
}

// connectExt is an ext-tasks session on a 2.x client: modern with the
// tasks extension in its per-request capabilities (--client v2), or legacy
// 2025-11-25 tasks (--client v1ext). onInput answers elicitations (task
// input and, modern, input_required on tools/call).
async function connectExt({ modern, token = opts.token, onInput } = {}) {
  const { createTaskSessionFromClient } = await import("@modelcontextprotocol/ext-tasks/client");
  const caps = onInput ? { elicitation: { form: {} } } : {};
  const c = await connect2({ modern, token, capabilities: caps });
  const errors = [];
  const sessionOptions = {
    endpointId: endpointId(token),
    onError: (e) => errors.push(e),
    ...(onInput ? {
      onInputRequest: async (request, context) => {
        assert(request.kind === "elicitation", `an input request of kind ${request.kind}`);
        return onInput(request.params, { via: `${context.scope}/${context.delivery}`, context });
      },
    } : {}),
  };
  if (modern) {
    sessionOptions.rawDispatch = rawCoordinator(c.transport);
    sessionOptions.v2RequestFraming = {
      protocolVersion: MODERN,
      clientInfo: INFO_V2,
      clientCapabilities: { ...caps, extensions: { [TASKS_EXT]: {} } },
    };
  }
  const session = createTaskSessionFromClient(c.client, sessionOptions);
  return {
    ...c, session, errors,
    close: async () => {
      try {
        await session.close();
      } finally {
        await c.client.close();
      }
    },
  };
}

// taskClient is the client of --client for the task scenarios, behind one
// surface:
//   start(args)   -> {kind: "task", taskId, h} or {kind: "immediate", result}
//   settle(h, onTask) -> {status, result, error}
//   get(id)       -> {status, statusMessage, raw}
//   cancel(id)    -> the acknowledgement
//   resultOf(id)  -> {status, result, error} once terminal
//   detach(h)     -> stop driving a started task, leaving it running
async function taskClient({ token = opts.token } = {}) {
  if (opts.client === "v1") {
    const c = await connectV1({ token });
    const { CallToolResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const tasks = c.client.experimental.tasks;
    const ro = { ...requestOptions, resetTimeoutOnProgress: true };
    return {
      ...c,
      declaresTasks() {
        const caps = c.client.getServerCapabilities() ?? {};
        assert(caps.tasks?.requests?.tools?.call, `capabilities.tasks.requests.tools.call missing: ${short(caps)}`);
        assert(caps.tasks?.cancel, `capabilities.tasks.cancel missing: ${short(caps.tasks)}`);
        assert(caps.tasks?.list, `capabilities.tasks.list missing: ${short(caps.tasks)}`);
      },
      async start(args) {
        const stream = tasks.callToolStream({ name: "execute_code", arguments: args }, CallToolResultSchema,
          { ...ro, task: { ttl: 3_600_000 } });
        const first = await stream.next();
        assert(!first.done, "callToolStream ended without a message");
        const m = first.value;
        if (m.type === "taskCreated") return { kind: "task", taskId: m.task.taskId, task: m.task, h: stream };
        if (m.type === "result") return { kind: "immediate", result: m.result };
        throw m.error ?? new Error(`callToolStream: ${short(m)}`);
      },
      async settle(stream, onTask) {
        for await (const m of stream) {
          if (m.type === "taskStatus") onTask?.(m.task);
          else if (m.type === "result") return { status: "completed", result: m.result };
          else if (m.type === "error") {
            const msg = m.error?.message ?? "";
            return { status: /cancelled/.test(msg) ? "cancelled" : "failed", error: m.error };
          }
        }
        throw new Error("callToolStream ended without a result or an error");
      },
      async detach(stream) {
        await stream.return();
      },
      async get(id) {
        const t = await tasks.getTask(id, ro);
        return { status: t.status, statusMessage: t.statusMessage, raw: t };
      },
      async cancel(id) {
        return tasks.cancelTask(id, ro);
      },
      async list() {
        const ids = [];
        let cursor;
        for (let page = 0; page < 50; page++) {
          const r = await tasks.listTasks(cursor, ro);
          ids.push(...r.tasks.map((t) => t.taskId));
          cursor = r.nextCursor;
          if (!cursor) return ids;
        }
        throw new Error("tasks/list still had pages after 50");
      },
      async resultOf(id) {
        for (;;) {
          const t = await tasks.getTask(id, ro);
          if (["completed", "failed", "cancelled"].includes(t.status)) {
            if (t.status !== "completed") return { status: t.status };
            return { status: "completed", result: await tasks.getTaskResult(id, CallToolResultSchema, ro) };
          }
          await sleep(Math.min(t.pollInterval ?? 1000, 2000));
        }
      },
      // A call without the task param: the ordinary result.
      async plainCall(args) {
        return c.client.callTool({ name: "execute_code", arguments: args }, undefined, ro);
      },
    };
  }
  const modern = opts.client === "v2";
  const c = await connectExt({ modern, token });
  const { session } = c;
  const outcome = (o) => o.status === "completed"
    ? { status: "completed", result: o.result }
    : { status: o.status, error: o.error };
  return {
    ...c,
    declaresTasks() {
      const caps = c.client.getServerCapabilities() ?? {};
      if (modern) {
        const ext = caps.extensions?.[TASKS_EXT];
        assert(ext && typeof ext === "object" && !Array.isArray(ext), `capabilities.extensions["${TASKS_EXT}"] is ${short(ext)} in ${short(caps)}`);
        assert(!caps.tasks, `the legacy tasks capability is declared under ${MODERN}: ${short(caps.tasks)}`);
      } else {
        assert(caps.tasks?.requests?.tools?.call, `capabilities.tasks.requests.tools.call missing: ${short(caps)}`);
      }
      assert(session.capabilities.execution === true, `ext-tasks sees no task execution: ${short(session.capabilities)}`);
    },
    async start(args) {
      const ex = await session.callTool("execute_code", args, {
        requestTimeoutMs: opts.timeoutMs,
        // 2026: the server decides; 2025: the client asks for a task.
        task: modern ? { preference: "allow" } : { preference: "require", retentionMs: 3_600_000 },
      });
      if (ex.kind === "task") return { kind: "task", taskId: ex.handle.taskId, h: ex };
      const o = await ex.result();
      return { kind: "immediate", result: o.status === "completed" ? o.result : undefined, outcome: o };
    },
    async settle(ex, onTask) {
      const { outcome: o } = await ex.settle({
        onEvent: (e) => {
          if (e.type === "task") onTask?.(e.task);
        },
      });
      return outcome(o);
    },
    async detach(ex) {
      await ex.detach();
      // Settled locally (closed), so that closing the session does not
      // cancel the task it no longer owns.
      await ex.result();
      await sleep(50);
    },
    async get(id) {
      const t = await session.task(id, { requestTimeoutMs: opts.timeoutMs }).snapshot();
      return { status: t.status, statusMessage: t.statusMessage, raw: t.raw };
    },
    async cancel(id) {
      return session.cancelTask(id);
    },
    async list() {
      const page = await session.listTasks();
      return page.tasks.map((t) => t.taskId);
    },
    async resultOf(id) {
      return outcome(await session.task(id, { requestTimeoutMs: opts.timeoutMs }).result());
    },
    async resume(id) {
      const ex = await session.resumeTask({
        endpointId: endpointId(token), generation: modern ? "v2" : "v1", taskId: id, originalOperation: "tools/call",
      }, { requestTimeoutMs: opts.timeoutMs });
      return ex;
    },
    // A call the session does not make a task of: modern, an ordinary
    // tools/call of the 2.x client, which declares no tasks extension;
    // legacy, a call without the task param.
    async plainCall(args) {
      return c.client.callTool({ name: "execute_code", arguments: args }, { timeout: opts.timeoutMs });
    },
  };
}

// plainClient is a client of the same generation that does not declare
// tasks at all.
async function plainClient(extra = {}) {
  if (opts.client === "v1") {
    const c = await connectV1(extra);
    return { ...c, call: (args) => c.client.callTool({ name: "execute_code", arguments: args }, undefined, requestOptions) };
  }
  const c = await connect2({ modern: opts.client === "v2", ...extra });
  return { ...c, call: (args) => c.client.callTool({ name: "execute_code", arguments: args }, requestOptions) };
}

// ---------------------------------------------------------------------------
// Task scenarios

const TERMINAL = ["completed", "failed", "cancelled"];

function sc(res) {
  return res?.structuredContent ?? {};
}

function assertTicks(res, seconds) {
  assert(res, "no result");
  assert(!res.isError, `the result is an error: ${short(textOf(res)) || short(res)}`);
  const s = sc(res);
  assert(s.ok === true, `ok is ${short(s.ok)}, error ${short(s.error)}`);
  const want = tickLines(seconds);
  if (s.truncated?.stdout) {
    // Past the answer budget (a ten-minute run prints 1,200 lines) the
    // answer keeps the head and the tail, as a call's would, and saves
    // the whole output in the workspace.
    const lines = want.trimEnd().split("\n");
    assert(s.stdout.startsWith(lines[0] + "\n") && s.stdout.endsWith(lines.at(-1) + "\n") && s.output_file,
      `cut stdout ${short(s.stdout, 200)}: want its first and last tick lines and an output_file`);
  } else {
    assert(s.stdout === want, `stdout is ${short(s.stdout, 200)}, want ${Math.round(seconds * 2)} tick lines`);
  }
  assert(s.result === Math.max(1, Math.round(seconds * 2)), `result is ${short(s.result)}`);
}

// watchProgress polls the task until a working snapshot's statusMessage
// shows a line of the code's output, or the task ends. It is the client's
// own look at what a user would be shown while the task works.
async function watchProgress(tc, id, stop) {
  const seen = { working: 0, messages: [], tick: false };
  while (!stop.done) {
    let t;
    try {
      t = await tc.get(id);
    } catch (err) {
      seen.error = describe(err);
      return seen;
    }
    if (t.status === "working") {
      seen.working++;
      if (t.statusMessage && seen.messages.length < 5) seen.messages.push(t.statusMessage);
      if (/tick \d+/.test(t.statusMessage ?? "")) {
        seen.tick = true;
        return seen;
      }
    }
    if (TERMINAL.includes(t.status)) return seen;
    await sleep(400);
  }
  return seen;
}

async function scenarioLong() {
  const tc = await need("connect", () => taskClient());
  try {
    await check("the server declares tasks", () => tc.declaresTasks());
    if (opts.client === "v1") {
      await check("execute_code declares execution.taskSupport optional", async () => {
        const { tools } = await tc.client.listTools(undefined, requestOptions);
        const t = tools.find((x) => x.name === "execute_code");
        assert(t?.execution?.taskSupport === "optional", `execution is ${short(t?.execution)}`);
      });
    }
    const s = opts.seconds;
    const started = await need(`execute_code running ${s} s returns a task`, async () => {
      const r = await tc.start(execArgs(tickCode(s), opts.timeoutSeconds));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      assert(typeof r.taskId === "string" && r.taskId.length >= 16, `task id ${short(r.taskId)} is short enough to guess`);
      return r;
    });
    await check("tasks/get resolves the new task at once", async () => {
      const t = await tc.get(started.taskId);
      assert(["working", "completed"].includes(t.status), `status ${t.status}`);
    });
    const stop = { done: false };
    const watching = watchProgress(tc, started.taskId, stop);
    const snapshots = [];
    const settled = await check("the task completes while the client polls", async () => {
      const o = await tc.settle(started.h, (t) => snapshots.push({ status: t.status, statusMessage: t.statusMessage }));
      assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
      return o;
    });
    stop.done = true;
    const seen = await watching;
    await check("while working, statusMessage carries the latest stdout lines", () => {
      const fromPolls = snapshots.some((t) => t.status === "working" && /tick \d+/.test(t.statusMessage ?? ""));
      assert(seen.tick || fromPolls, `working snapshots: ${seen.working}, messages ${short(seen.messages)}${seen.error ? `, error ${seen.error}` : ""}`);
    });
    if (settled) {
      await check(`the result has every line, the result and ok`, () => assertTicks(settled.result, s));
    }
    await check("tasks/get of the finished task says completed", async () => {
      const t = await tc.get(started.taskId);
      assert(t.status === "completed", `status ${t.status}`);
    });
    if (opts.client === "v1") {
      await check("tasks/list lists the task", async () => {
        const ids = await tc.list();
        assert(ids.includes(started.taskId), `${started.taskId} not in ${short(ids)}`);
      });
    }
    if (opts.client === "v2" && opts.maxTimeout !== undefined && opts.timeoutSeconds > opts.maxTimeout) {
      await check(`timeout_seconds ${opts.timeoutSeconds} (beyond sandbox.maxTimeout ${opts.maxTimeout}) is refused to a client without tasks`, async () => {
        const p = await plainClient();
        try {
          let res;
          try {
            res = await p.call(execArgs("print('x')", opts.timeoutSeconds));
          } catch (err) {
            return; // a protocol error refuses it too
          }
          assert(res.isError === true, `it ran: ${short(res.structuredContent ?? res)}`);
          assert(/timeout_seconds/.test(textOf(res)), `the error does not name the field: ${short(textOf(res))}`);
        } finally {
          await p.close();
        }
      });
    }
  } finally {
    await tc.close();
  }
}

async function scenarioCompare() {
  const s = 3;
  const code = tickCode(s);
  const tc = await need("connect (tasks)", () => taskClient());
  let asTask;
  try {
    const started = await need(`the ${s} s code returns a task`, async () => {
      const r = await tc.start(execArgs(code));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      return r;
    });
    asTask = await need("the task completes", async () => {
      const o = await tc.settle(started.h);
      assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
      return o.result;
    });
  } finally {
    await tc.close();
  }
  const p = await need("connect (a client that does not declare tasks)", () => plainClient());
  let sync;
  try {
    sync = await need(`the same code runs synchronously for a client without tasks`, async () => {
      const res = await p.call(execArgs(code));
      assert(res && res.resultType !== "task" && !res.task && !res.taskId, `not an ordinary result: ${short(res)}`);
      assert(res.structuredContent, `no structuredContent: ${short(res)}`);
      return res;
    });
  } finally {
    await p.close();
  }
  await check("task and synchronous runs give the same stdout, result and ok", () => {
    const a = sc(asTask);
    const b = sc(sync);
    for (const k of ["stdout", "result", "ok"]) {
      assert(isDeepStrictEqual(a[k], b[k]), `${k}: task ${short(a[k], 200)}, synchronous ${short(b[k], 200)}`);
    }
    assert(Boolean(asTask.isError) === Boolean(sync.isError), `isError: task ${asTask.isError}, synchronous ${sync.isError}`);
    assertTicks(asTask, s);
  });
}

async function scenarioCancel() {
  const tc = await need("connect", () => taskClient());
  try {
    const long = Math.max(60, opts.seconds * 10);
    const started = await need("a long execution returns a task", async () => {
      const r = await tc.start(execArgs(tickCode(long), opts.timeoutSeconds));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      return r;
    });
    const id = started.taskId;
    // Cancel mid-run: once the code has printed (or after 15 s of looking).
    const stop = { done: false };
    const timer = setTimeout(() => { stop.done = true; }, 15_000);
    const seen = await watchProgress(tc, id, stop);
    clearTimeout(timer);
    if (!seen.tick) emit("the task showed output before the cancel (not required)", true, `status messages: ${short(seen.messages)}`);
    // ext-tasks' cancel of the owned execution, or tasks/cancel by id.
    const ack = await check("tasks/cancel is acknowledged", async () => {
      const r = await tc.cancel(id);
      if (opts.client === "v1") {
        // 2025-11-25: the server moves the task to cancelled before it answers.
        assert(r?.status === "cancelled", `the cancel result's status is ${short(r?.status)}`);
      }
      return true;
    });
    if (started.h && opts.client !== "v1") {
      await check("ext-tasks settles the execution as cancelled", async () => {
        const o = await tc.settle(started.h);
        assert(o.status === "cancelled", `outcome ${o.status}${o.result ? `: ${short(sc(o.result), 200)}` : ""}`);
      });
    }
    if (ack) {
      const final = await check("the task's status becomes cancelled", async () => {
        for (let i = 0; i < 300; i++) {
          const t = await tc.get(id);
          if (TERMINAL.includes(t.status)) {
            assert(t.status === "cancelled", `status ${t.status}`);
            return t;
          }
          await sleep(200);
        }
        throw new Error("not terminal after 300 polls");
      });
      if (final) {
        await sleep(1500);
        await check("and stays cancelled", async () => {
          const t = await tc.get(id);
          assert(t.status === "cancelled", `status ${t.status}`);
        });
      }
    }
    await check("a following execute_code works", async () => {
      const res = await tc.plainCall(execArgs("print('after cancel')"));
      assert(!res.isError && sc(res).ok === true && sc(res).stdout === "after cancel\n", `result ${short(sc(res))}`);
    });
  } finally {
    await tc.close();
  }
}

async function scenarioReconnect() {
  const s = Math.min(opts.seconds, 4);
  let id;
  const a = await need("connect (first client)", () => taskClient());
  try {
    const started = await need("a task is started", async () => {
      const r = await a.start(execArgs(tickCode(s)));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      return r;
    });
    id = started.taskId;
    await check("the first client lets go of the task", () => a.detach(started.h));
  } finally {
    await a.close();
  }
  const b = await need("connect (a new client, a new connection)", () => taskClient());
  try {
    await check("the new client's tasks/get finds the task", async () => {
      const t = await b.get(id);
      assert(["working", "completed"].includes(t.status), `status ${t.status}`);
    });
    if (b.resume) {
      await check("ext-tasks resumes the task on the new client and settles it", async () => {
        const ex = await b.resume(id);
        const o = await b.settle(ex);
        assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
        assertTicks(o.result, s);
      });
    }
    await check("the new client gets the task's result", async () => {
      const o = await b.resultOf(id);
      assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
      assertTicks(o.result, s);
    });
  } finally {
    await b.close();
  }
}

async function scenarioStart() {
  const tc = await need("connect", () => taskClient());
  try {
    await need("a task is started", async () => {
      const r = await tc.start(execArgs(tickCode(opts.seconds), opts.timeoutSeconds));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      emit("task id", true, undefined, { taskId: r.taskId, seconds: opts.seconds });
      await tc.detach(r.h);
      return r;
    });
  } finally {
    await tc.close();
  }
}

async function scenarioResume() {
  assert(opts.taskId, "resume needs --task-id");
  const tc = await need("connect (a new process)", () => taskClient());
  try {
    await check("tasks/get finds the task", async () => {
      const t = await tc.get(opts.taskId);
      assert(["working", "completed"].includes(t.status), `status ${t.status}`);
    });
    await check("the task's result comes to the new process", async () => {
      const o = await tc.resultOf(opts.taskId);
      assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
      assertTicks(o.result, opts.seconds);
    });
  } finally {
    await tc.close();
  }
}

// expectTaskError checks that fn fails with a JSON-RPC error: the other
// namespace must not reach the task.
async function expectTaskError(fn) {
  let r;
  try {
    r = await fn();
  } catch (err) {
    return rpcCode(err);
  }
  throw new Error(`it succeeded: ${short(r)}`);
}

// rpcCode is the JSON-RPC error code an error of any of the clients carries:
// its own code when it is one (an HTTP transport's error carries the HTTP
// status instead), else the code in the response body it quotes.
function rpcCode(err) {
  for (let e = err; e; e = e.cause) {
    if (typeof e.code === "number" && e.code < 0) return e.code;
    const m = /"code"\s*:\s*(-\d+)/.exec(`${e.data?.text ?? ""} ${e.message ?? ""}`);
    if (m) return Number(m[1]);
  }
  return `none (${describe(err)})`;
}

async function scenarioNamespaces() {
  assert(opts.url && opts.token && opts.token2, "namespaces needs --http, --token and --token2");
  const s = Math.min(opts.seconds, 4);
  const a = await need("connect (token A)", () => taskClient({ token: opts.token }));
  try {
    const started = await need("token A starts a task", async () => {
      const r = await a.start(execArgs(tickCode(s)));
      assert(r.kind === "task", `an immediate result instead: ${short(r.result ?? r.outcome)}`);
      return r;
    });
    const id = started.taskId;
    const b = await need("connect (token B)", () => taskClient({ token: opts.token2 }));
    try {
      await check("token B's tasks/get of A's task fails", async () => {
        const code = await expectTaskError(() => b.get(id));
        assert(code === -32602, `the error's code is ${short(code)}, the specifications say -32602 (Invalid params)`);
      });
      await check("token B's tasks/cancel of A's task fails", async () => {
        await expectTaskError(() => b.cancel(id));
      });
      if (opts.client === "v1") {
        await check("token B's tasks/result of A's task fails", async () => {
          const { CallToolResultSchema } = await import("@modelcontextprotocol/sdk/types.js");
          await expectTaskError(() => b.client.experimental.tasks.getTaskResult(id, CallToolResultSchema, requestOptions));
        });
      }
      if (opts.client === "v1" || opts.client === "v1ext") {
        await check("token B's tasks/list does not list A's task", async () => {
          const ids = await b.list();
          assert(!ids.includes(id), `listed: ${short(ids)}`);
        });
        await check("token A's tasks/list lists it", async () => {
          const ids = await a.list();
          assert(ids.includes(id), `${id} not in ${short(ids)}`);
        });
      }
      await check("token B's tasks/get of an unknown id fails the same way", async () => {
        const code = await expectTaskError(() => b.get(`${id}-unknown`));
        assert(code === -32602, `the error's code is ${short(code)}`);
      });
    } finally {
      await b.close();
    }
    await check("A's task was untouched: it completes for A", async () => {
      const o = await a.settle(started.h);
      assert(o.status === "completed", `status ${o.status}: ${describe(o.error)}`);
      assertTicks(o.result, s);
    });
  } finally {
    await a.close();
  }
}

// ---------------------------------------------------------------------------
// Approval scenarios

const UP = () => opts.upstream;

// createCode calls create_entities count times, naming the entities
// <prefix>-<i>. With catchDenied, ApprovalDenied is caught and printed.
function createCode(prefix, count, { catchDenied = false, sleepFirst = 0 } = {}) {
  const lines = [];
  if (sleepFirst) lines.push("import time", `time.sleep(${sleepFirst})`);
  lines.push("from servers import ApprovalDenied", `from servers.${UP()} import create_entities`, "ran = 0");
  if (catchDenied) lines.push("try:");
  const ind = catchDenied ? "    " : "";
  lines.push(
    `${ind}for i in range(${count}):`,
    `${ind}    create_entities(entities=[{'name': f'${prefix}-{i}', 'entityType': 'codecell-approval', 'observations': ['approval test']}])`,
    `${ind}    ran += 1`,
  );
  if (catchDenied) {
    lines.push("except ApprovalDenied as e:", "    print('DENIED-MARKER', type(e).__name__, str(e))");
  }
  lines.push("print('ran', ran)", "result = ran");
  return lines.join("\n");
}

function countCode(prefix) {
  return `from servers.${UP()} import read_graph\nresult = len([e for e in read_graph()['entities'] if e['name'].startswith('${prefix}-')])`;
}

// Elicitations the host was asked, and what it answered.
function recorder(answer) {
  const asked = [];
  const elicit = async (params, how) => {
    asked.push({ params, via: how.via, scope: how.context?.scope, delivery: how.context?.delivery });
    return answer(params, asked.length);
  };
  return { asked, elicit };
}

// checkQuestion checks what the host was asked about a call of tool with
// an argument containing arg.
function checkQuestion(q, tool, arg) {
  const p = q.params ?? {};
  assert((p.mode ?? "form") === "form", `mode ${short(p.mode)}`);
  const msg = p.message ?? "";
  assert(msg.includes(UP()), `the message does not name the server ${UP()}: ${short(msg)}`);
  assert(msg.includes(tool), `the message does not name the tool ${tool}: ${short(msg)}`);
  assert(msg.includes(arg), `the message does not show the arguments (${arg}): ${short(msg)}`);
  const schema = p.requestedSchema ?? {};
  assert(schema.type === "object", `requestedSchema.type ${short(schema.type)}`);
  const props = schema.properties ?? {};
  assert(isDeepStrictEqual(Object.keys(props), ["allow_all"]), `requestedSchema has the properties ${short(Object.keys(props))}, want only allow_all`);
  assert(props.allow_all?.type === "boolean", `allow_all is ${short(props.allow_all)}`);
}

// approvalClient is the client of --client for the approval scenarios,
// declaring form elicitation unless elicit is null.
async function approvalClient(elicit) {
  if (opts.client === "v1") {
    const c = await connectV1({ elicit: elicit ?? undefined });
    return { ...c, call: (args) => c.client.callTool({ name: "execute_code", arguments: args }, undefined, requestOptions) };
  }
  if (opts.client === "v2") {
    const c = await connect2({ modern: true, elicit: elicit ?? undefined });
    return { ...c, call: (args) => c.client.callTool({ name: "execute_code", arguments: args }, requestOptions) };
  }
  throw new Error(`the approval scenarios run with --client v1 or v2, not ${opts.client}`);
}

async function waitUpstream(call) {
  // The upstream connects in the background; code that imports it waits,
  // but a first call can race its start. Count until it answers.
  for (let i = 0; i < 60; i++) {
    const res = await call(execArgs(countCode("warmup")));
    if (!res.isError && sc(res).ok) return;
    await sleep(500);
  }
  throw new Error(`the upstream ${UP()} did not answer read_graph`);
}

async function scenarioApproveAll() {
  const prefix = `all-${tag()}`;
  const rec = recorder(() => ({ action: "accept", content: { allow_all: true } }));
  const c = await need("connect (declaring elicitation)", () => approvalClient(rec.elicit));
  try {
    await need("the upstream answers", () => waitUpstream(c.call));
    const res = await need("50 calls of the gated tool, accepted with allow_all", async () => {
      const r = await c.call(execArgs(createCode(prefix, 50)));
      assert(!r.isError && sc(r).ok === true, `result ${short(sc(r).error ?? r)}`);
      assert(sc(r).stdout === "ran 50\n", `stdout ${short(sc(r).stdout)}`);
      return r;
    });
    await check("the host was asked exactly once", () => assert(rec.asked.length === 1, `asked ${rec.asked.length} times`));
    if (rec.asked.length > 0) {
      await check("the question names the server, the tool and the arguments, and offers allow_all", () =>
        checkQuestion(rec.asked[0], "create_entities", `${prefix}-0`));
      await check(`it came as ${opts.client === "v1" ? "elicitation/create" : "input_required"}`, () =>
        assert(rec.asked[0].via === (opts.client === "v1" ? "elicitation/create" : "input_required"), `via ${rec.asked[0].via}`));
    }
    if (res) {
      await check("all 50 calls ran (the upstream holds 50 entities)", async () => {
        const r = await c.call(execArgs(countCode(prefix)));
        assert(sc(r).result === 50, `read_graph finds ${short(sc(r).result)} (${short(sc(r).error)})`);
      });
    }
    await check("allow_all lasts one execution: the next asks again", async () => {
      const before = rec.asked.length;
      const r = await c.call(execArgs(createCode(`${prefix}-next`, 2)));
      assert(!r.isError && sc(r).stdout === "ran 2\n", `result ${short(sc(r))}`);
      assert(rec.asked.length === before + 1, `asked ${rec.asked.length - before} times`);
    });
  } finally {
    await c.close();
  }
}

async function scenarioApproveDecline() {
  for (const action of ["decline", "cancel"]) {
    const prefix = `${action}-${tag()}`;
    const rec = recorder(() => ({ action }));
    const c = await need(`connect (declaring elicitation; the host will ${action})`, () => approvalClient(rec.elicit));
    try {
      await need("the upstream answers", () => waitUpstream(c.call));
      await check(`${action}: the code catches servers.ApprovalDenied`, async () => {
        const r = await c.call(execArgs(createCode(prefix, 3, { catchDenied: true })));
        const out = sc(r).stdout ?? "";
        assert(!r.isError && sc(r).ok === true, `result ${short(sc(r).error ?? r)}`);
        assert(/DENIED-MARKER ApprovalDenied/.test(out), `stdout ${short(out)}`);
        assert(/ran 0\n/.test(out), `a call ran: ${short(out)}`);
      });
      await check(`${action}: the host was asked once`, () => assert(rec.asked.length === 1, `asked ${rec.asked.length} times`));
      if (rec.asked.length > 0) {
        await check(`${action}: the question names the server, the tool and the arguments`, () =>
          checkQuestion(rec.asked[0], "create_entities", `${prefix}-0`));
      }
      await check(`${action}: no call ran (read_graph finds nothing)`, async () => {
        const r = await c.call(execArgs(countCode(prefix)));
        assert(sc(r).ok === true && sc(r).result === 0, `read_graph finds ${short(sc(r).result)} (${short(sc(r).error)})`);
      });
      await check(`${action}: an uncaught denial fails the execution with ApprovalDenied`, async () => {
        const r = await c.call(execArgs(createCode(`${prefix}-uncaught`, 1)));
        assert(r.isError === true && sc(r).ok === false, `result ${short(sc(r))}`);
        assert(/ApprovalDenied/.test(sc(r).error?.type ?? ""), `error ${short(sc(r).error)}`);
      });
    } finally {
      await c.close();
    }
  }
}

async function scenarioApproveNone() {
  const prefix = `none-${tag()}`;
  const c = await need("connect (no elicitation capability)", () => approvalClient(null));
  try {
    await need("the upstream answers", () => waitUpstream(c.call));
    await check("the call raises ApprovalDenied saying the client cannot approve", async () => {
      const r = await c.call(execArgs(createCode(prefix, 1, { catchDenied: true })));
      const out = sc(r).stdout ?? "";
      assert(!r.isError && sc(r).ok === true, `result ${short(sc(r).error ?? r)}`);
      const m = /DENIED-MARKER ApprovalDenied (.*)/.exec(out);
      assert(m, `stdout ${short(out)}`);
      assert(/ran 0\n/.test(out), `the call ran: ${short(out)}`);
      assert(/client/i.test(m[1]) && /(cannot|can't|can not|unable|not able|does not|doesn't|no\b|without)/i.test(m[1]) && /(approv|elicit)/i.test(m[1]),
        `the message does not say the client cannot approve: ${short(m[1])}`);
    });
    await check("no call ran (read_graph finds nothing)", async () => {
      const r = await c.call(execArgs(countCode(prefix)));
      assert(sc(r).ok === true && sc(r).result === 0, `read_graph finds ${short(sc(r).result)} (${short(sc(r).error)})`);
    });
  } finally {
    await c.close();
  }
}

async function scenarioApproveTask() {
  assert(opts.client === "v2", "approve-task runs with --client v2");
  for (const action of ["accept", "decline"]) {
    const prefix = `task-${action}-${tag()}`;
    const rec = recorder(() => (action === "accept" ? { action, content: { allow_all: true } } : { action }));
    const c = await need(`connect (ext-tasks, declaring elicitation; the host will ${action})`, () => connectExt({ modern: true, onInput: rec.elicit }));
    try {
      await need("the upstream answers", async () => {
        await waitUpstream((args) => c.client.callTool({ name: "execute_code", arguments: args }, requestOptions));
      });
      // The code sleeps past sandbox.taskAfter before its first gated call,
      // so that the task exists when the approval is needed.
      const count = action === "accept" ? 10 : 3;
      const ex = await need("the execution becomes a task", async () => {
        const e = await c.session.callTool("execute_code", execArgs(createCode(prefix, count, { catchDenied: true, sleepFirst: 3 })), {
          requestTimeoutMs: opts.timeoutMs, task: { preference: "allow" },
        });
        assert(e.kind === "task", "an immediate result: the approval did not come inside a task");
        return e;
      });
      const statuses = [];
      const o = await need("the task completes", async () => {
        const r = await ex.settle({ onEvent: (e) => { if (e.type === "task") statuses.push(e.task.status); } });
        assert(r.outcome.status === "completed", `outcome ${r.outcome.status}: ${describe(r.outcome.error)}`);
        return r.outcome.result;
      });
      await check(`the approval came as input_required in the task, answered with tasks/update`, () => {
        assert(rec.asked.length >= 1, "the host was not asked");
        const q = rec.asked[0];
        assert(q.scope === "task" && q.delivery === "task-update", `scope ${q.scope}, delivery ${q.delivery}`);
        assert(statuses.includes("input_required"), `the task's statuses seen: ${short(statuses)}`);
      });
      await check("the host was asked exactly once", () => assert(rec.asked.length === 1, `asked ${rec.asked.length} times`));
      if (rec.asked.length > 0) {
        await check("the question names the server, the tool and the arguments, and offers allow_all", () =>
          checkQuestion(rec.asked[0], "create_entities", `${prefix}-0`));
      }
      const out = sc(o).stdout ?? "";
      if (action === "accept") {
        await check(`all ${count} calls ran`, async () => {
          assert(out === `ran ${count}\n`, `stdout ${short(out)}`);
          const r = await c.client.callTool({ name: "execute_code", arguments: execArgs(countCode(prefix)) }, requestOptions);
          assert(sc(r).result === count, `read_graph finds ${short(sc(r).result)}`);
        });
      } else {
        await check("decline: the code catches ApprovalDenied and no call ran", async () => {
          assert(/DENIED-MARKER ApprovalDenied/.test(out) && /ran 0\n/.test(out), `stdout ${short(out)}`);
          const r = await c.client.callTool({ name: "execute_code", arguments: execArgs(countCode(prefix)) }, requestOptions);
          assert(sc(r).result === 0, `read_graph finds ${short(sc(r).result)}`);
        });
      }
      await check("ext-tasks reported no input errors", () => assert(c.errors.length === 0, c.errors.map(describe).join("; ")));
    } finally {
      await c.close();
    }
  }
}

async function scenarioApproveDestructive() {
  const prefix = `destr-${tag()}`;
  const rec = recorder(() => ({ action: "accept" }));
  const c = await need("connect (declaring elicitation)", () => approvalClient(rec.elicit));
  try {
    await need("the upstream answers", () => waitUpstream(c.call));
    const code = [
      `from servers.${UP()} import create_entities, read_graph, delete_entities`,
      `create_entities(entities=[{'name': '${prefix}-0', 'entityType': 'codecell-approval', 'observations': ['x']}])`,
      "n = len(read_graph()['entities'])",
      `delete_entities(entityNames=['${prefix}-0'])`,
      "print('done')",
    ].join("\n");
    await check("read-only and non-destructive tools run without asking; the destructive one asks", async () => {
      const r = await c.call(execArgs(code));
      assert(!r.isError && sc(r).stdout === "done\n", `result ${short(sc(r))}`);
      assert(rec.asked.length === 1, `asked ${rec.asked.length} times: ${short(rec.asked.map((q) => q.params?.message))}`);
      checkQuestion(rec.asked[0], "delete_entities", `${prefix}-0`);
    });
    await check("the destructive call ran once approved", async () => {
      const r = await c.call(execArgs(countCode(prefix)));
      assert(sc(r).result === 0, `read_graph finds ${short(sc(r).result)}`);
    });
  } finally {
    await c.close();
  }
}

// ---------------------------------------------------------------------------

const RUN = {
  long: scenarioLong,
  compare: scenarioCompare,
  cancel: scenarioCancel,
  reconnect: scenarioReconnect,
  start: scenarioStart,
  resume: scenarioResume,
  namespaces: scenarioNamespaces,
  "approve-all": scenarioApproveAll,
  "approve-decline": scenarioApproveDecline,
  "approve-none": scenarioApproveNone,
  "approve-task": scenarioApproveTask,
  "approve-destructive": scenarioApproveDestructive,
};

for (const s of opts.scenarios) {
  scenario = s;
  try {
    await RUN[s]();
    emit("scenario ran to the end", true);
  } catch (err) {
    emit("scenario stopped", false, err instanceof Stop ? `after the failed check "${err.message}"` : (err?.stack ?? String(err)));
  }
}
process.exitCode = failures > 0 ? 1 : 0;
// Handles a closed client may leave (timers of an SDK) do not hold the run.
setTimeout(() => process.exit(process.exitCode), 2000).unref();
