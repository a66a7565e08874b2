#!/usr/bin/env node
// Trivial execute_code latency through the official TypeScript MCP SDK
// client, the client Claude Desktop, Claude Code and Cursor are built on.
// `codecell bench --ts-client testdata/npm/latency.mjs` runs it beside its
// own figures; by hand:
//
//   node testdata/npm/latency.mjs --n 300 -- bin/codecell serve --config c.json --data-dir d
//
// It lives beside package.json so that Node finds the pinned SDK in
// node_modules. After --warmup calls (default 50) it times --n calls of
// execute_code with print(1), one after another, and prints one JSON line:
// {"ms": [each call's milliseconds]}. Exit status 1 when a call fails.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

function parseArgs(argv) {
  const o = { n: 300, warmup: 50 };
  const sep = argv.indexOf("--");
  if (sep < 0 || sep === argv.length - 1) {
    process.stderr.write("usage: latency.mjs [--n N] [--warmup N] -- CMD ARGS...\n");
    process.exit(2);
  }
  for (let i = 0; i < sep; i += 2) {
    if (argv[i] === "--n") o.n = Number(argv[i + 1]);
    else if (argv[i] === "--warmup") o.warmup = Number(argv[i + 1]);
  }
  o.command = argv[sep + 1];
  o.args = argv.slice(sep + 2);
  return o;
}

const o = parseArgs(process.argv.slice(2));
const client = new Client({ name: "codecell-bench-ts", version: "1" });
await client.connect(new StdioClientTransport({ command: o.command, args: o.args, stderr: "inherit" }));

async function call() {
  const res = await client.callTool({ name: "execute_code", arguments: { code: "print(1)" } });
  if (res.isError) {
    throw new Error("execute_code failed: " + JSON.stringify(res.content));
  }
}

try {
  for (let i = 0; i < o.warmup; i++) await call();
  const ms = [];
  for (let i = 0; i < o.n; i++) {
    const start = process.hrtime.bigint();
    await call();
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  process.stdout.write(JSON.stringify({ ms }) + "\n");
} catch (e) {
  process.stderr.write(`latency: ${e.message}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}
