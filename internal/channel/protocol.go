package channel

// The frame types: the "type" field of every frame between the host and the
// Python runner. internal/runner/PROTOCOL.md says who sends each one, when,
// and with which fields; the runner package's contract test holds the
// Python side to exactly these names.
const (
	// TypeExec (host to runner) carries one execution's code and limits.
	TypeExec = "exec"
	// TypeOutput (runner to host) carries a piece of stdout or stderr,
	// where the host could not pass the runner its output pipes.
	TypeOutput = "output"
	// TypeCall (runner to host) is a call from the code to the host; its
	// method is one of the Method constants.
	TypeCall = "call"
	// TypeReply (host to runner) answers one call, by its id.
	TypeReply = "reply"
	// TypeResult (runner to host) is an execution's outcome, its last frame.
	TypeResult = "result"
	// TypeReady (fork server to host) says the fork server is up (on the
	// zygote's control socket) or that its next child waits for an exec
	// frame (the gVisor fork server's stdout).
	TypeReady = "ready"
	// TypeChild (zygote to host, on the control socket) hands the host the
	// channel of a process forked ahead of need.
	TypeChild = "child"
	// TypeExited (fork server to host) reports that an execution's process
	// exited, how, and whether the sandbox was cleaned up after it.
	TypeExited = "exited"
)

// The host-call methods: the "method" field of a TypeCall frame.
// internal/runner/PROTOCOL.md gives each one's params, reply and the Python
// exceptions its failures become.
const (
	// MethodTool calls an upstream tool; the host counts these against
	// the execution's limit of tool calls.
	MethodTool = "tool"
	// MethodCodecell calls one of codecell's own tools.
	MethodCodecell = "codecell"
	// MethodSearchTools searches the tool catalog.
	MethodSearchTools = "search_tools"
	// MethodGetToolDefinition returns one tool's catalog entry.
	MethodGetToolDefinition = "get_tool_definition"
	// MethodServerReady waits for an upstream server that was not
	// connected when the servers package was generated.
	MethodServerReady = "server_ready"
)
