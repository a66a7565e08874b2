// Package bench measures how many tokens a model reads and writes to do a
// task by calling upstream MCP tools directly, against doing the same task
// through codecell's code mode (BENCHMARKS.md, context efficiency).
//
// It bundles the scenario servers (team documents, file storage,
// spreadsheets, a CRM and a support desk, 12 to 17 tools each, written with
// the official MCP SDK and served in process or over Streamable HTTP on
// loopback, see [NewServers]), the scenarios ([Scenarios]), a fourth
// scenario on real MCP servers from npm started with node ([NPMServers],
// [NPMScenario]), and a
// cl100k_base BPE tokenizer whose vocabulary is embedded, so a run needs no
// network ([NewTokenizer]).
//
// A transcript is the text the model sees, each piece counted once, in
// order. Direct calling: every server's instructions and tools/list (every
// definition of every scenario server, since a host loads them all before
// it knows the task), then each call the model writes, arguments included,
// and each result it reads. Code mode: codecell's instructions and
// tools/list, one search_tools call and its result, then each execute_code
// call (the code) and its result. Both sides get their results from real
// servers: the direct side calls the scenario servers through an MCP client
// session, the code side runs its code in a real codecell ([CodeRunner]).
//
// Both sides are counted the same way: tool lists as the model reads them,
// each tool's name, description and input schema, which is all a host can
// pass to the model's API (titles and output schemas stay with the host; see
// [ToolsText]), and results as the JSON of their structured content (see
// [ResultText]).
//
// Not counted, on either side: the user's task, the system prompt, the
// model's reasoning and its final answer, which are the same both ways; and
// the re-reading of the whole context on every turn, which makes direct
// calling cost more in practice than its transcript does here.
package bench
