// Package bench measures how many tokens a model reads and writes to do a
// task by calling upstream MCP tools directly, against doing the same task
// through codecell's code mode (SPEC §10, context efficiency).
//
// It bundles the scenario servers (a document store, file storage, a CRM
// and a ticket tracker, written with the official MCP SDK and served in
// process or over Streamable HTTP on loopback), the scenarios, and a
// cl100k_base BPE tokenizer whose vocabulary is embedded, so a run needs no
// network.
//
// A transcript is the text the model sees, counted once, in order: for
// direct calling, every tool definition of every scenario server, each call
// the model writes, and each result as it comes back; for code mode,
// codecell's own tool list, one search_tools call and its result, the code
// and the execute_code result. Both sides get their results from real
// servers: the direct side calls the scenario servers through an MCP client
// session, the code side runs the code in a real codecell through a
// [CodeRunner].
//
// What the count does not include, on either side: the user's task, the
// system prompt and the model's own reasoning, which are the same both ways;
// and the re-reading of the whole context on every turn, which makes direct
// calling cost more in practice than its transcript does here.
package bench
