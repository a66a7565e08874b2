"""codecell's Python side: a fork server (zygote) and the execution runner.

The host starts this file inside the sandbox, in one of two modes:

  --zygote FD   Fork server. FD is a SOCK_SEQPACKET control socket to the host.
                It forks each execution's process ahead of need and sends the
                host that process's channel ("child", with the socket as
                SCM_RIGHTS); the host then talks to the child directly, and
                the child runs exactly one execution. The zygote itself never sees user
                code. After the child exits it kills every other process in the
                sandbox, wipes /tmp, reaps, and reports "exited". Executions in
                one zygote are serial, so nothing of one survives into the next.
  --forkserver  A fork server over stdin and stdout, for gVisor, where
                descriptors cannot be passed: each execution's process is a
                child forked ahead of need, which serves one execution over
                stdin (frames in) and stdout (frames out) (see forkserver).

Frames are a 4-byte big-endian length and a JSON object with a "type" (see
internal/channel). internal/runner/PROTOCOL.md lists every frame and host
call; their names are Go constants in internal/channel, and a contract test
in internal/runner holds this file and the codecell package to them.

This file is not a security boundary: the sandbox is. It only has to be
correct for code that is not trying to break it, and to fail closed (the
host then discards the sandbox) for code that is.
"""

import _ast
import builtins
import codecs
import ctypes
import fcntl
import gc
import io
import json
import linecache
import os
import resource
import select
import signal
import _signal
import _socket
import struct
import sys
import threading
import time
import traceback

# The runtime's own json functions, bound before any user code runs: code
# that replaces json.dumps or json.loads (a mock, a monkeypatch) changes its
# own json, not the frames the runtime sends and reads.
_json_dumps, _json_loads = json.dumps, json.loads

CELL = "<cell>"
THREAD_STACK = 2 << 20
_rpc = None  # codecell._rpc, imported by main once sys.path is set
_display = None  # codecell._display, likewise
_tables = None  # codecell._tables, likewise
# Frames come from the host, which is trusted; the bound only stops nonsense.
MAX_FRAME = 256 << 20
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
_libc = ctypes.CDLL(None, use_errno=True)
# The same C library through PyDLL, whose calls keep the GIL: see fork().
_libc_gil = ctypes.PyDLL(None, use_errno=True)


# --- framing -----------------------------------------------------------------

class Channel:
    """Frames over a pair of file descriptors (the same one for a socket).

    With sock (a Unix socket, zygote mode) a frame's first bytes may carry
    descriptors: the output pipes of a session's next execution. recv puts
    them in the frame as "_fds".

    recv keeps what it has read of a frame in a buffer, so a read cut short
    by an exception (a signal handler of the code's raising while a tool
    call waits for its answer) loses nothing: the next recv, by whichever
    thread reads the channel then, goes on from there. One thread at a time
    may call recv.
    """

    def __init__(self, rfd, wfd, sock=None):
        self.rfd, self.wfd = rfd, wfd
        self.sock = sock
        self.lock = threading.Lock()
        self._buf = bytearray()
        self._fds = []  # descriptors that came with the frame being read

    # One encoder for every frame: json.dumps with arguments of its own
    # builds a new one on each call (a tool call's frame costs two).
    _encoder = json.JSONEncoder(ensure_ascii=False, default=repr)

    @classmethod
    def encode(cls, msg):
        data = cls._encoder.encode(msg).encode("utf-8", "surrogatepass")
        return struct.pack(">I", len(data)) + data

    def send(self, msg):
        self.send_frame(self.encode(msg))

    def send_frame(self, buf):
        """Writes a frame that encode made."""
        with self.lock:
            view = memoryview(buf)
            while view:
                n = os.write(self.wfd, view)
                view = view[n:]

    def _fill(self, want):
        if self.sock is None:
            # No descriptors to keep apart: read ahead, so that a frame
            # (a tool call's answer) usually takes one system call.
            data = os.read(self.rfd, max(want, 65536))
        elif not self._buf:
            data, fds = recv_fds(self.sock, want)
            self._fds.extend(fds)
        else:
            # Exactly what this frame lacks: the next frame's first bytes
            # may carry descriptors, which recv_fds must receive with them.
            data = os.read(self.rfd, want)
        if not data:
            raise EOFError("channel closed")
        self._buf += data

    def recv(self, header=b""):
        """Reads one frame; header is the part of it already read."""
        self._buf += header
        while len(self._buf) < 4:
            self._fill(4 - len(self._buf))
        (n,) = struct.unpack(">I", self._buf[:4])
        if n > MAX_FRAME:
            raise ValueError("frame too large")
        while len(self._buf) < 4 + n:
            self._fill(4 + n - len(self._buf))
        data = bytes(self._buf[4:4 + n])
        del self._buf[:4 + n]
        fds, self._fds = self._fds, []
        # The host writes UTF-8: decoded as such, json.loads need not
        # detect the encoding of each frame.
        msg = _json_loads(data.decode("utf-8", "surrogatepass"))
        if fds:
            msg["_fds"] = fds
        return msg


# --- one execution -----------------------------------------------------------

def apply_limits(limits):
    """Lowers this process's limits; hard limits too, so code cannot raise them.

    RLIMIT_CPU counts from the start of the process: a child the fork server
    forked has used next to none, so the code gets its limit as is.
    """
    def setlim(which, value):
        if value is None:
            return
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass

    # Threads are how code runs upstream calls concurrently. glibc would give
    # each the 8 MiB stack of RLIMIT_STACK, so the address-space limit ran
    # out after a few dozen; 2 MiB is ample for Python's recursion limit.
    threading.stack_size(THREAD_STACK)
    guard_thread_start(limits)
    setlim(resource.RLIMIT_CORE, 0)
    memory = limits.get("memory")
    if memory:
        # What the fork server preloaded is not the code's: the code gets
        # the address space it would have had without it.
        memory += _preloaded["vm"]
    setlim(resource.RLIMIT_AS, memory)
    fsize = limits.get("file_size")
    soft = limits.get("file_size_soft")
    if fsize is not None and soft:
        # A session's execution: what is left of the workspace's quota is
        # the soft limit, under a hard limit that stays the same from one
        # execution to the next (a hard limit can only ever go down).
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (min(soft, fsize), fsize))
        except (ValueError, OSError):
            pass
    else:
        setlim(resource.RLIMIT_FSIZE, fsize)
    setlim(resource.RLIMIT_NOFILE, limits.get("open_files"))
    setlim(resource.RLIMIT_NPROC, limits.get("nproc"))
    cpu = limits.get("cpu_seconds")
    if cpu:
        # Soft limit sends SIGXCPU (which the host reports as a timeout); the
        # hard limit one second later is SIGKILL for code that ignores it.
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        except (ValueError, OSError):
            pass


class Forwarder(threading.Thread):
    """Copies the code's output pipes to the channel as frames.

    One thread for both pipes: under gVisor, where it runs, starting a
    thread took 2 to 7 ms of the sandbox's turnaround between executions.
    """

    def __init__(self, chan, streams):
        super().__init__(daemon=True)
        self.chan = chan
        self.streams = streams  # read end -> "stdout" or "stderr"
        self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("replace") for fd in streams}

    def run(self):
        poller = select.poll()
        for fd in self.streams:
            poller.register(fd, select.POLLIN)
        left = set(self.streams)
        try:
            while left:
                for fd, _ in poller.poll():
                    data = os.read(fd, 65536)
                    text = self.decoders[fd].decode(data, final=not data)
                    if text:
                        self.chan.send({"type": "output", "stream": self.streams[fd], "data": text})
                    if not data:
                        poller.unregister(fd)
                        left.discard(fd)
        except OSError:
            return


def jsonable(value):
    """Returns (json_value, True) when value survives a JSON round trip."""
    try:
        text = _json_dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None, False
    return _json_loads(text), True


def encode_result(value, limit):
    if _tables is not None and _tables.kind(value) is not None:
        # A frame as a table a model reads (head, tail, shape, dtypes), and
        # as data when it is small.
        try:
            out = {"kind": "repr", "value": cut_text(_tables.text(value), limit)}
            t = _tables.table(value)
            if t is not None:
                out["table"] = t
            return out
        except Exception:
            pass  # a frame that cannot be shown so is shown as its repr
    v, ok = jsonable(value)
    if ok and len(_json_dumps(v)) <= limit:
        return {"kind": "json", "value": v}
    try:
        text = repr(value)
    except Exception as e:  # a hostile __repr__ must not lose the output
        text = "<unrepresentable %s: %s>" % (type(value).__name__, e)
    return {"kind": "repr", "value": cut_text(text, limit)}


# A cut never leaves part of a value readable (the host's package textcut
# states the rule): the run of the characters values are made of that the
# cut would split (dave.trunc@example.o, 15 of a card's 16 digits) is
# dropped, backing off at most CUT_BOUND characters.
CUT_BOUND = 256


def is_value_char(c):
    return c.isalpha() or c.isdigit() or c in "@.+-_%"


def cut_text(text, limit):
    """text cut to at most limit characters, splitting no run of value
    characters, the cut marked."""
    if len(text) <= limit:
        return text
    end = max(limit, 0)
    if end > 0 and is_value_char(text[end - 1]) and is_value_char(text[end]):
        stop = max(0, end - CUT_BOUND)
        while end > stop and is_value_char(text[end - 1]):
            end -= 1
    return text[:end] + "... [%d characters dropped]" % (len(text) - end)


def cut_error(error, limits):
    """An error's message and traceback, each cut to the result's limit: a
    frame has a bound, and an exception's message does not."""
    limit = limits.get("result_bytes", 1 << 20)
    for key in ("message", "traceback"):
        if isinstance(error.get(key), str):
            error[key] = cut_text(error[key], limit)
    return error


_GEN = None  # the directory of the generated servers package (--gen), once known


def _internal(filename):
    """Whether a frame's file is codecell's, not the user's: this file, the
    codecell package, or the generated servers package (a one-line wrapper
    around codecell._rpc.call)."""
    path = os.path.abspath(filename)
    here = os.path.dirname(os.path.abspath(__file__))
    # Run as its bytecode (codecell_runner.pyc), its frames still name the
    # source.
    if path == os.path.join(here, "codecell_runner.py") or path.startswith(os.path.join(here, "codecell") + os.sep):
        return True
    return _GEN is not None and path.startswith(os.path.join(_GEN, "servers") + os.sep)


def user_traceback(exc):
    """The traceback with codecell's own frames removed: a tool error then
    shows the user's line and servers.ToolError, not the runtime's calls."""
    te = traceback.TracebackException.from_exception(exc)

    def strip(t):
        t.stack = traceback.StackSummary.from_list(
            [f for f in t.stack if not _internal(f.filename)])
        if t.__cause__:
            strip(t.__cause__)
        if t.__context__:
            strip(t.__context__)

    strip(te)
    return "".join(te.format())


def sandbox_tasks():
    """The processes and threads in this sandbox (its PID namespace), or None
    where /proc shows more than the sandbox."""
    n = 0
    try:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/status" % d) as f:
                        n += int(f.read().split("\nThreads:", 1)[1].split()[0])
                except (OSError, IndexError, ValueError):
                    pass
    except OSError:
        return None
    return n


def thread_limit(limits):
    """Why a thread could not start, naming the limit and its config key:
    Python's "can't start new thread" names neither."""
    pids, mem, nproc = limits.get("pids"), limits.get("memory"), limits.get("nproc")
    try:
        with open("/proc/self/status") as f:
            running = int(f.read().split("\nThreads:", 1)[1].split()[0])
    except (OSError, IndexError, ValueError):
        running = threading.active_count()
    tasks = sandbox_tasks() if nproc and limits.get("level") != "development" else None
    advice = "; use fewer threads (ThreadPoolExecutor(max_workers=...)), or raise it in codecell's config"
    if tasks is not None and tasks >= nproc - 1:
        return ("the sandbox's process and thread limit, sandbox.pids = %d, is reached (%d threads in this process)"
                % (pids, running)) + advice
    if mem:
        return ("the sandbox's memory limit, sandbox.memory = %d MiB of address space, has no room for another"
                " thread's %d MiB stack (%d threads in this process; sandbox.pids = %s)"
                % (mem >> 20, THREAD_STACK >> 20, running, pids)) + advice
    return "the host refused another thread (%d threads in this process)" % running


_limits = {}  # this execution's limits, for guard_thread_start's message


# --- the network ----------------------------------------------------------

# The egress proxy's socket, where the sandbox has a network: the code's
# only way out (the sandbox has no interface but loopback). Clients that
# take an HTTP proxy by host and port (HTTP_PROXY: urllib, requests, pip)
# reach it through a relay on loopback that this process serves; code that
# connects to a host directly (http.client, socket.create_connection) is
# sent through the same relay as a CONNECT. Neither is a boundary: the
# proxy on the host decides, whatever the code sends it.
_EGRESS = os.environ.get("CODECELL_EGRESS")
_EGRESS_PORT = int(os.environ.get("CODECELL_EGRESS_PORT") or 0)  # sandbox.EgressPort
_egress_on = False
if _EGRESS:
    import socket as _sockmod  # before the fork, so children have it


def egress_relay():
    """Serves the relay in this process (once) and routes direct
    connections through it."""
    global _egress_on
    if not _EGRESS or _egress_on:
        return
    _egress_on = True
    from codecell import _relay
    try:
        _relay.serve(_EGRESS, _EGRESS_PORT)
    except OSError:
        pass  # a session's earlier relay, or the code's own: leave it
    _sockmod.create_connection = _via_proxy(_sockmod.create_connection)


def _via_proxy(orig):
    def create_connection(address, timeout=_sockmod._GLOBAL_DEFAULT_TIMEOUT, source_address=None, *args, **kwargs):
        host, port = address[0], address[1]
        if host in ("localhost", "::1") or str(host).startswith("127."):
            return orig(address, timeout, source_address, *args, **kwargs)
        s = orig(("127.0.0.1", _EGRESS_PORT), timeout)
        try:
            authority = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (authority, authority)).encode("ascii"))
            head = b""
            while not head.endswith(b"\r\n\r\n"):  # a byte at a time: what follows is the host's
                b = s.recv(1)
                if not b or len(head) > 65536:
                    raise ConnectionError("codecell's egress proxy closed the connection to %s" % authority)
                head += b
            status = head.split(b" ", 2)[1] if head.count(b" ") >= 1 else b""
            if status != b"200":
                length = 0
                for line in head.split(b"\r\n"):
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v.strip() or 0)
                body = b""
                while len(body) < min(length, 4096):
                    b = s.recv(4096)
                    if not b:
                        break
                    body += b
                raise ConnectionRefusedError("codecell's egress proxy refused %s: %s" % (
                    authority, body.decode("utf-8", "replace").strip() or head.split(b"\r\n")[0].decode("latin-1")))
        except BaseException:
            s.close()
            raise
        return s
    create_connection._codecell = True
    return create_connection


def guard_thread_start(limits):
    """Makes a thread that cannot start say which limit stopped it, at the
    moment it fails (by the time the error reaches the runner, the code's
    other threads may have ended)."""
    global _limits
    _limits = limits
    for name in ("_start_new_thread", "_start_joinable_thread"):  # 3.11-3.12, 3.13
        orig = getattr(threading, name, None)
        if orig is None or getattr(orig, "_codecell", False):
            continue

        def start(*args, _orig=orig, **kwargs):
            try:
                return _orig(*args, **kwargs)
            except RuntimeError as e:
                if not str(e).startswith("can't start new thread"):
                    raise
                raise RuntimeError("%s: %s" % (e, thread_limit(_limits))) from None
        start._codecell = True
        setattr(threading, name, start)


def error_of(exc, limits=None):
    name = type(exc).__name__
    if isinstance(exc, MemoryError):
        name = "MemoryLimit"
    try:
        message = str(exc)
    except Exception:
        message = "<unprintable>"
    if isinstance(exc, MemoryError) and not message:
        message = "the code ran out of its memory limit"
    if isinstance(exc, RuntimeError) and message == "can't start new thread":  # not from threading
        message += ": " + thread_limit(limits or {})
    top = (exc.name or "").split(".")[0] if isinstance(exc, ModuleNotFoundError) else ""
    if top == "skills":
        message += "; list_skills lists this namespace's skills, save_skill saves one"
    elif top == "servers":
        near = servers_near(exc.name.split(".")[1] if "." in exc.name else "", None)
        message += "; " + (near + "; " if near else "") + "search_tools finds the upstream tools and the servers they come from"
    elif (isinstance(exc, ImportError) and (exc.name or "").startswith("servers.")
          and message.startswith("cannot import name '")):
        server, tool = exc.name.split(".")[1], message.split("'")[1]
        near = servers_near(tool, server)
        message += "; " + (near + "; " if near else "") + (
            "help(servers.%s) lists its tools; search_tools finds tools by what they do" % server)
    elif top:
        message += ("; to install it, call install_dependencies with packages=[%r] (after configure_environment"
                    " with type venv; the package name may differ from the module name)" % top)
    elif isinstance(exc, (ImportError, OSError)) and out_of_memory(message):
        message += "; " + memory_hint(limits or {})
    elif isinstance(exc, SyntaxError):
        hint = shell_hint(exc.text)
        if hint:
            message += "; " + hint
    return {"type": name, "message": message, "traceback": user_traceback(exc)}


_INSTALLERS = ("pip", "pip3", "conda", "mamba", "uv")


def shell_hint(line):
    """What to do instead of a shell or notebook command that failed to
    parse as Python (pip install x, !ls, %pip install x), or None."""
    line = (line or "").strip()
    words = line.lstrip("!%").split()
    if not words:
        return None
    if words[0] == "uv" and words[1:2] == ["pip"]:
        words = words[1:]
    if words[0] in _INSTALLERS and words[1:2] == ["install"]:
        pkgs = [w for w in words[2:] if not w.startswith("-")]
        return ("codecell runs Python, not shell commands: to install packages, call install_dependencies%s"
                " (after configure_environment with type venv)" % (" with packages=%r" % pkgs if pkgs else ""))
    if line[0] in "!%":
        return ("codecell runs Python, not shell or notebook commands (! and %% lines): run a program with"
                " subprocess.run([%r, ...]), where the sandbox has it" % words[0])
    return None


def servers_tools():
    """{server: [tool]} of the generated servers package, from its files
    (each tool is servers/<server>/<tool>.py), without importing them."""
    servers = sys.modules.get("servers")
    out = {}
    if servers is None or not getattr(servers, "__file__", None):
        return out
    here = os.path.dirname(servers.__file__)
    for name in sorted(getattr(servers, "_SERVERS", ())):
        try:
            out[name] = sorted(f[:-3] for f in os.listdir(os.path.join(here, name))
                               if f.endswith(".py") and not f.startswith("_"))
        except OSError:
            out[name] = []
    return out


def servers_near(name, server):
    """Did you mean ...: the names nearest name by spelling among the tools
    of server, or, with server None, among the servers; then a tool of
    that name on another server. "" when nothing is near."""
    if not name:
        return ""
    import difflib  # only here: the fork server stays small
    tools = servers_tools()
    base = name[:-len("_async")] if name.endswith("_async") else name
    if server is None:
        near = ["servers." + s for s in difflib.get_close_matches(name, list(tools), 3, 0.6)]
    else:
        near = difflib.get_close_matches(base, tools.get(server, []), 3, 0.6)
        near = [n + name[len(base):] for n in near]
    if not near:
        near = ["from servers.%s import %s" % (s, t + name[len(base):])
                for s in tools if s != server for t in tools[s] if t == base]
    if not near:
        for s in tools:
            if s != server:
                near += ["servers.%s.%s" % (s, t) for t in difflib.get_close_matches(base, tools[s], 1, 0.8)]
    return "did you mean %s?" % " or ".join(near[:3]) if near else ""


# What the loader and the C library say when the address space is full: an
# extension module (numpy's) that cannot be mapped fails to import with a
# long message that does not say memory is the cause.
_NO_MEMORY = ("failed to map segment", "cannot allocate memory", "out of memory")


def out_of_memory(message):
    lower = message.lower()
    return any(s in lower for s in _NO_MEMORY)


def memory_hint(limits):
    mem = limits.get("memory")
    if mem:
        return ("the sandbox's memory limit, sandbox.memory = %d MiB of address space, is likely full: free"
                " memory (del large objects; a session keeps its globals: close_session), or raise it in"
                " codecell's config" % (mem >> 20))
    return "the host is out of memory"


_MISSING = object()


# The fork server imports the C modules _ast and _socket, not the ast and
# socket modules around them: those pull in about 1 MB of other modules, and
# every page of the fork server is a page table entry to copy at each fork
# and to tear down at each exit (issue 16).


def walk(node):
    """Every node of an _ast tree (ast.walk without the ast module)."""
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, _ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, _ast.AST))


def assigns_result(tree):
    """Whether the code assigns the name result anywhere (a function body
    included: that errs towards returning the session's result)."""
    return any(isinstance(n, _ast.Name) and n.id == "result" and isinstance(n.ctx, _ast.Store)
               for n in walk(tree))


def run_cell(code, glb, filename=CELL):
    """Runs code like a notebook cell; returns (has_value, value).

    In a session glb lives on, so a result left by an earlier cell counts
    only if this cell set it again.
    """
    tree = compile(code, filename, "exec", _ast.PyCF_ONLY_AST)  # ast.parse
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    last = None
    if tree.body and isinstance(tree.body[-1], _ast.Expr):
        last = _ast.Expression(tree.body.pop().value)
    before = glb.get("result", _MISSING)
    exec(compile(tree, filename, "exec"), glb)
    # The last expression always runs (it may be a print), even when result
    # is what the cell returns.
    has, value = False, None
    if last is not None:
        has, value = True, eval(compile(last, filename, "eval"), glb)
    # Only a session's cell that leaves an earlier result untouched needs
    # the walk: fresh globals have no earlier result.
    if "result" in glb and (glb["result"] is not before or assigns_result(tree)
                            or (last is not None and assigns_result(last))):
        return True, glb["result"]
    return has, value


def new_globals():
    return {"__name__": "__main__", "__builtins__": builtins, "__doc__": None,
            "display_image": _display.display_image, "display": _tables.display}


def stdin_devnull():
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def std_streams():
    """The text streams over fds 1, 2 and 0 that the code sees."""
    return (io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                             errors="backslashreplace", line_buffering=True),
            io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                             errors="backslashreplace", line_buffering=True),
            io.TextIOWrapper(io.FileIO(0, "r", closefd=False)))


_prepared = None  # the first execution's streams, made by prepare_child


def prepare_child():
    """Does ahead of need, while a forked child waits for its code, what
    every execution does first whatever its code.

    The child shares the fork server's pages copy-on-write, so its first
    write to each page is a page fault (about 4 us each on this kind of VM,
    with the copy and the TLB flush): an execution's path took about 310 of
    them, 1.4 ms before its result. Done here, the same work moves off that
    path at no extra cost: a rehearsal on nothing, down the path an
    execution takes (its frame through a socket, its limits, a cell that
    prints, its result frame back), leaves it about 40 faults (issue 16).

    The streams are made over a placeholder pipe on fds 1 and 2, the same
    kind of file as the host's output pipes that execute() puts there, so
    they behave the same (not seekable, not a terminal). Its read end stays
    open until capture_output, so what the rehearsal prints has somewhere
    to go.
    """
    global _prepared, _placeholder
    become_child()
    _placeholder, w = os.pipe()
    os.dup2(w, 1)
    os.dup2(w, 2)
    os.close(w)
    stdin_devnull()
    _prepared = std_streams()
    ours, host = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        host.sendall(Channel.encode({"type": "exec", "code": "print(1)", "limits": {}}))
        header, _ = recv_fds(ours, 4)
        chan = Channel(ours.fileno(), ours.fileno(), ours)
        req = chan.recv(header)
        chan.sock = None
        apply_limits(req["limits"])  # none: only what every execution sets
        stdout = sys.stdout
        sys.stdout = _prepared[0]
        try:
            out = {"type": "result", "ok": True, "error": None}
            has, value = run_cell("print(1)\n1", new_globals(), CELL)
            out["result"] = encode_result(value, 1 << 20)
            _display.collect(out, value, has)
            _prepared[0].flush()
        finally:
            sys.stdout = stdout
        chan.send(out)
    finally:
        ours.close()
        host.close()
    linecache.cache.pop(CELL, None)


_placeholder = None  # the read end of prepare_child's pipe


def capture_output(chan, outfds):
    """Puts the output pipes on fds 1 and 2 and /dev/null on 0, and the
    streams the code sees over them (made ahead of need by prepare_child,
    for a process's first execution); without outfds, starts the thread
    that forwards the pipes over the channel, and returns it in a list
    (else the list is empty)."""
    streams = {}
    for fd, name in ((1, "stdout"), (2, "stderr")):
        if outfds:
            w = outfds[fd - 1]
        else:
            r, w = os.pipe()
            streams[r] = name
        if w != fd:  # in a session the pipes may arrive as 1 and 2, closed by the last run
            os.dup2(w, fd)
            os.close(w)
        else:
            os.set_inheritable(fd, True)
    global _prepared, _placeholder
    prepared, _prepared = _prepared, None
    if _placeholder is not None:
        os.close(_placeholder)
        _placeholder = None
    if prepared is None:
        stdin_devnull()
    sys.stdout, sys.stderr, sys.stdin = prepared or std_streams()
    if not streams:
        return []
    forwarder = Forwarder(chan, streams)
    forwarder.start()
    return [forwarder]


def execute(chan, req, outfds=None, glb=None, pipes=None):
    """Runs one exec request in this process with fds 1 and 2 captured.

    outfds are the write ends of the host's stdout and stderr pipes where
    descriptors can be passed (zygote mode); otherwise output is forwarded
    over the channel as frames by two threads. glb are a session's globals;
    None runs in fresh ones. pipes are capture_output's, where it ran
    ahead of need.
    """
    limits = req.get("limits", {})
    if pipes is None:
        pipes = capture_output(chan, outfds)
    if _EGRESS:
        egress_relay()
    filename = req.get("filename") or CELL
    sys.argv = [filename] + list(req.get("args") or [])

    _rpc._chan = chan  # tool calls and search_tools go over the channel
    sys.modules["codecell"]._only(req.get("codecell_tools"))
    if glb is None:
        glb = new_globals()
    if filename != CELL:
        glb["__file__"] = filename
    for k, v in (req.get("context") or {}).items():
        if isinstance(k, str) and k.isidentifier():
            glb[k] = v

    out = {"type": "result", "ok": True, "error": None}
    _display.reset()
    has, value = False, None
    try:
        has, value = run_cell(req.get("code", ""), glb, filename)
        if has:
            out["result"] = encode_result(value, limits.get("result_bytes", 1 << 20))
    except SystemExit as e:
        if e.code not in (None, 0):
            out["ok"] = False
            out["error"] = cut_error({"type": "SystemExit", "message": "exit status %r" % (e.code,),
                                      "traceback": ""}, limits)
    except BaseException as e:
        out["ok"] = False
        out["error"] = cut_error(error_of(e, limits), limits)
    try:
        _display.collect(out, value, has)
    except BaseException as e:  # images are extra: never lose the result for them
        out["images_dropped"] = ["all (%s: %s)" % (type(e).__name__, e)]

    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    if not pipes:
        # The host's pipes: everything written is in them, and the host
        # waits for their end as well as for the result, so the result goes
        # first. Closing them first woke the host's pipe readers, which
        # took the CPU from this process before it sent the result (about
        # 0.1 to 0.2 ms of an execution's latency).
        chan.send(out)
    # Close our ends of the output pipes and give the forwarders a moment to
    # drain; a background process still holding them is killed afterwards.
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    for p in pipes:
        p.join(0.2)
    if pipes:
        chan.send(out)  # after the output frames the forwarders sent


def become_child():
    """Makes this process an execution's: a session of its own, dumpable
    (its own /proc files readable by the code), default signal handling."""
    # Always a child the fork server forked, so never a process group
    # leader: setsid cannot fail.
    os.setsid()
    _libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    # _signal, not signal: signal's wrappers convert to enums, which touches
    # pages an execution otherwise never needs.
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    if "matplotlib" in sys.modules:
        # matplotlib, preloaded, knows its cache dir from the fork server;
        # the wipe after each execution took it.
        try:
            os.makedirs(os.environ.get("MPLCONFIGDIR", "/tmp/.matplotlib"), exist_ok=True)
        except OSError:
            pass


def child_main(chan, limits, outfds=None, header=b"", pipes=None):
    if _prepared is None and pipes is None:
        become_child()  # else prepare_child, or a --forkserver child, did
    try:
        req = chan.recv(header)
        if req.get("type") != "exec":
            raise ValueError("expected exec frame")
        if req.get("chdir"):
            # The workspace was mounted after this process was forked (a
            # sandbox started before a namespace claimed it): its working
            # directory is still the empty one beneath.
            os.chdir(req["chdir"])
        if req.get("session"):
            session(chan, limits, req, outfds)  # never returns
        # Outside a session no frame after this one carries descriptors
        # (only a session's next exec frame does), so the channel may read
        # ahead.
        chan.sock = None
        req["limits"] = dict(limits, **req.get("limits", {}))
        apply_limits(req["limits"])
        execute(chan, req, outfds, pipes=pipes)
    except BaseException as e:
        try:
            chan.send({"type": "result", "ok": False,
                       "error": {"type": "SandboxError", "message": "runner: %s" % e, "traceback": ""}})
        except BaseException:
            pass
        os._exit(70)
    # Closing the channel before exiting lets the host see its end now, not
    # after the address space is torn down.
    try:
        os.close(chan.wfd)
    except OSError:
        pass
    os._exit(0)


def session(chan, limits, req, outfds):
    """Serves a session: exec after exec in this process, with globals that
    persist, until the host closes the channel (or kills the sandbox).

    Once the code has made a call to the host, _rpc's reader thread owns the
    channel; so in a session that thread reads every frame from the start
    and hands the next exec frame (with its output pipes, in zygote mode)
    to this loop.
    """
    import queue
    frames = queue.Queue()
    _rpc._chan = chan
    _rpc.start_reader(frames.put)
    glb = new_globals()
    while True:
        req["limits"] = dict(limits, **req.get("limits", {}))
        apply_limits(req["limits"])
        execute(chan, req, outfds, glb)
        req = frames.get()
        if req is None:
            os._exit(0)  # the host ended the session
        if req.get("type") != "exec":
            raise ValueError("expected exec frame")
        outfds = None
        if chan.sock is not None:
            outfds = req.pop("_fds", None)
            if not outfds or len(outfds) != 2:
                raise ValueError("exec frame without its output pipes")


# --- the zygote --------------------------------------------------------------

def kill_others(isolated):
    """Kills every process left in the sandbox except this one, and reaps."""
    if not isolated:
        return True
    if not has_children():
        return True
    for _ in range(2000):
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
            if pid <= 0:
                break
        try:
            os.kill(-1, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.0005)
    return False


def has_children():
    """Whether anything but this process is left in the sandbox.

    This process is the PID namespace's init, and every process in a
    namespace descends from its init: once the execution's process is
    reaped, its survivors are this process's children or below them, and
    the list of children names zombies too until they are reaped. So an
    empty list means nothing is left, and the common case skips kill(-1),
    which walks every process of the host, twice, and a waitpid that fails
    with an exception (objects, so pages written: see below). Where the
    list cannot be read, the answer is yes (kill_others then does the
    work).
    """
    try:
        # os.open and os.read, not open(): fewer objects, fewer pages
        # written in a process whose every page write is a fault.
        fd = os.open(_CHILDREN, os.O_RDONLY)
        try:
            return os.read(fd, 64).strip() != b""
        finally:
            os.close(fd)
    except OSError:
        return True


_CHILDREN = "/proc/self/task/%d/children" % os.getpid()


def wipe(path):
    """Empties a directory the code could write, whatever it did to modes."""
    try:
        names = os.listdir(path)
    except OSError:
        return True
    ok = True
    for name in names:
        p = os.path.join(path, name)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                for root, dirs, _ in os.walk(p):
                    for d in dirs:
                        try:
                            os.chmod(os.path.join(root, d), 0o700)
                        except OSError:
                            pass
                os.chmod(p, 0o700)
                rmtree(p)
            else:
                os.unlink(p)
        except OSError:
            ok = False
    return ok


def rmtree(path):
    """shutil.rmtree without shutil, which imports the compression modules
    (see walk). Symbolic links are removed, not followed."""
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files:
            os.unlink(os.path.join(root, name))
        for name in dirs:
            p = os.path.join(root, name)
            if os.path.islink(p):
                os.unlink(p)
            else:
                os.rmdir(p)
    os.rmdir(path)


def recv_fds(sock, size):
    """Receives up to size bytes and the descriptors passed with them."""
    data, anc, _, _ = sock.recvmsg(size, _socket.CMSG_SPACE(16 * struct.calcsize("i")))
    fds = []
    for level, kind, payload in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            n = len(payload) // struct.calcsize("i")
            fds.extend(struct.unpack("%di" % n, payload[: n * struct.calcsize("i")]))
    return data, fds


# --- preload -----------------------------------------------------------------

# What preload did, for the "ready" frame: the modules imported, those that
# failed (with why), and the address space they mapped, which each child's
# memory limit leaves out (the code gets the headroom it had without them).
_preloaded = {"loaded": [], "failed": [], "vm": 0, "rss": 0, "threads": 0}
_PRELOAD = []  # the modules to preload (--preload)


def _status(*keys):
    """Fields of /proc/self/status, in bytes (kB fields) or counts."""
    out = dict.fromkeys(keys, 0)
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                k, _, v = line.partition(b":")
                k = k.decode()
                if k in out:
                    parts = v.split()
                    out[k] = int(parts[0]) * (1024 if parts[1:] == [b"kB"] else 1)
    except (OSError, ValueError, IndexError):
        pass
    return out


def trusted_path(entry):
    """Says whether a sys.path entry holds only what the operator installed:
    the interpreter's own library and the system's site directories, never
    an environment that install_dependencies writes into (a venv's own
    site-packages) nor anything the code could have placed."""
    real = os.path.realpath(entry or ".")
    if sys.prefix != sys.base_prefix and (real == sys.prefix or real.startswith(sys.prefix + os.sep)):
        return False  # a venv's own packages: what install_dependencies put there
    for root in (os.path.realpath(sys.base_prefix), "/usr"):
        if real == root or real.startswith(root + os.sep):
            return True
    return False


def top_level_names(entry):
    """The top-level module names a sys.path entry provides."""
    names = set()
    try:
        listing = os.listdir(entry)
    except OSError:
        return names
    for name in listing:
        base = name.split(".", 1)[0]
        if base and not name.endswith((".dist-info", ".egg-info", ".pth")):
            names.add(base)
    return names


def preload(modules):
    """Imports modules in the fork server, before it forks, so that an
    execution importing them finds them loaded.

    Only what the operator installed is imported here: sys.path is cut to
    the system's own entries for the duration, so the fork server never runs
    code that install_dependencies or the code put in place (it never runs
    user code). Where that loaded a module the environment has its own copy
    of (its own numpy, say), the system's would stand in for the
    environment's: the fork server starts again without the preload
    (restart_without_preload). A module that fails is reported and skipped.
    Module-level random state is reseeded in each child (see reseed).
    """
    if not modules:
        return
    before = _status("VmSize", "VmRSS", "Threads")
    saved = list(sys.path)
    system, mine = [], set()
    for p in filter(None, saved):
        if trusted_path(p):
            system.append(p)
        else:
            mine |= top_level_names(p)
    had = set(sys.modules)
    sys.path[:] = system
    try:
        for name in modules:
            try:
                __import__(name)
                _preloaded["loaded"].append(name)
            except BaseException as e:  # SystemExit or a library's own error alike
                msg = "%s: %s" % (type(e).__name__, e)
                _preloaded["failed"].append({"module": name, "error": msg[:200]})
    finally:
        sys.path[:] = saved
    clash = mine & {m.partition(".")[0] for m in sys.modules if m not in had}
    if clash:
        restart_without_preload("the environment has its own %s, which the system's, preloaded, would stand in for"
                                % ", ".join(sorted(clash)[:5]))
    warm_preloaded()
    after = _status("VmSize", "VmRSS", "Threads")
    _preloaded["vm"] = max(0, after["VmSize"] - before["VmSize"])
    _preloaded["rss"] = max(0, after["VmRSS"] - before["VmRSS"])
    _preloaded["threads"] = max(0, after["Threads"] - before["Threads"])


def preload_report():
    """What the "ready" frame says of the preload: None where none was
    asked for (a lean fork server)."""
    return _preloaded if _PRELOAD or _preloaded["failed"] else None


def restart_without_preload(why):
    """Starts this fork server again, in place (the same process, its
    descriptors kept), without --preload, saying why in --preload-skipped.
    Nothing has been forked yet: no execution sees the modules imported."""
    argv = list(sys.orig_argv)
    i = argv.index("--preload")
    del argv[i:i + 2]
    os.execv(sys.executable, argv + ["--preload-skipped", why])


def warm_preloaded():
    """Runs, once in the fork server, what the preloaded libraries do lazily
    on their first use in a process (pandas' groupby machinery, matplotlib's
    renderer and fonts), so that each child inherits it done. Library code
    on fixed data, never the code's; a failure only leaves it undone."""
    warm_pandas()
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.plot([1, 2, 3], [3, 1, 2])
            plt.savefig(io.BytesIO(), format="png")
        except Exception:
            pass
        finally:
            plt.close("all")


def warm_pandas():
    """A small frame grouped, merged, pivoted and shown: pandas' lazy
    set-up, done in the fork server. (Done again in each child as it waits
    for its code, to take the copy-on-write faults of those pages ahead of
    need, it made sequential data cells slower on a 2-core machine: the
    rehearsal competed for the CPU with the execution before it.)"""
    pd = sys.modules.get("pandas")
    if pd is None:
        return
    try:
        df = pd.DataFrame({"k": [1, 2, 1], "v": [1.0, 2.0, 3.0]})
        df.groupby("k")["v"].agg(["sum", "mean"])
        df.merge(df, on="k").pivot_table(index="k", values="v_x", aggfunc="sum")
        df.to_string()
    except Exception:
        pass


def reseed():
    """Gives a child its own random state where a preloaded module made one
    at import: every child would otherwise start from the fork server's
    (numpy's global RandomState, which numpy seeds once at import; random's
    own after-fork hook does not run under fork(), which skips them)."""
    r = sys.modules.get("random")
    if r is not None:
        r.seed()
    npr = sys.modules.get("numpy.random")
    if npr is not None:
        try:
            npr.seed()
        except Exception:
            pass


def warm_up():
    """Runs the execution path once on nothing in the fork server, so the
    lazy initialisation it costs is done once, not in every child."""
    glb = {"__name__": "__main__", "__builtins__": builtins}
    run_cell("pass\n1", glb)
    encode_result({"a": [1, 2.5, "x", None]}, 1 << 20)
    _json_loads(_json_dumps({"type": "result", "ok": True, "error": None}))
    codecs.getincrementaldecoder("utf-8")("replace").decode(b"x")


def settle():
    """Readies a fork server's memory for its first fork.

    Objects alive now are never collected: the garbage collector then
    leaves their pages alone in forked children (fewer copy-on-write
    faults). What start-up left behind is freed first, and the C library
    hands the free pages back (about 1 MB): fewer pages to copy at each
    fork and to tear down at each exit (under gVisor, which copies on write
    2 MiB at a time, fewer such blocks).
    """
    gc.collect()
    try:
        _libc.malloc_trim(0)
    except AttributeError:
        pass  # not glibc
    gc.freeze()


def fork():
    """fork(2) through the C library, without os.fork's bookkeeping.

    os.fork runs CPython's after-fork handlers in the child (thread state,
    locks, threading._after_fork, signal state): on this kind of VM those
    alone cost about 160 copy-on-write page faults, a third of a child's
    faults before it runs the code. They exist for a process that had other
    threads when it forked, and for modules that reseed (random); the fork
    server starts no thread (checked here, with os.fork the fallback), and
    the child reseeds what needs it itself (reseed). glibc's fork still runs
    its own atfork handlers (OpenBLAS's, for one). Through PyDLL the call
    keeps the GIL, so the child starts holding it as the parent's only
    thread did.
    """
    if (threading.active_count() != 1 or sys.implementation.name != "cpython"
            or not getattr(sys, "_is_gil_enabled", lambda: True)()):
        # Or an interpreter whose state after a fork this was not made for:
        # another implementation, or a free-threaded build.
        pid = os.fork()
        if pid == 0:
            reseed()
        return pid
    pid = _libc_gil.fork()
    if pid < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    if pid == 0:
        # What threading._after_fork would correct for the main thread.
        set_native_id = getattr(threading.main_thread(), "_set_native_id", None)
        if set_native_id is not None:
            set_native_id()
        reseed()
    return pid


def prefork(ctl):
    """Forks the next execution's process ahead of need and hands the host
    its channel.

    The child waits on the channel, having touched nothing. The host's exec
    frame arrives there directly, its first four bytes carrying the stdout and
    stderr pipes as SCM_RIGHTS, so the zygote is not on an execution's path.
    It is forked after the previous execution was cleaned up, so no
    execution has touched it.
    """
    host, mine = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    # The host gets the channel before the fork: after it, every page this
    # process writes is a copy-on-write fault while the child lives (the
    # sendmsg after the fork took about 80 of them per execution). An exec
    # frame that comes first waits in the socket for the child.
    ctl.sendmsg([_CHILD_MSG], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("i", host.fileno()))])
    host.close()
    # A bare descriptor across the fork: closing a socket object after it
    # wrote that object's page, a fault (see fork).
    fd = mine.detach()
    pid = fork()
    if pid == 0:
        # Dies with the zygote: in development there is no PID namespace to
        # take it down.
        _libc.prctl(PR_SET_PDEATHSIG, _signal.SIGKILL, 0, 0, 0)
        ctl.close()
        prepare_child()
        mine = _socket.socket(fileno=fd)
        try:
            header, fds = recv_fds(mine, 4)
        except OSError:
            os._exit(0)
        if not header or len(fds) != 2:
            os._exit(0)  # the host let it go unused, or spoke nonsense
        os.set_inheritable(fd, False)  # the code's subprocesses get no channel
        child_main(Channel(fd, fd, mine), {}, fds, header)
    os.close(fd)
    return pid


_CHILD_MSG = _json_dumps({"type": "child"}).encode()


def map_text_at_fork():
    """Has fork(2) copy this process's mappings of program text and
    read-only data to each child, rather than leave the child to fault them
    in again.

    fork copies a private file mapping's page tables only if the mapping
    has anonymous pages of its own; the interpreter's and the C library's
    code and read-only data have none, so every child took about 85 page
    faults to map again the code it runs (issue 16), each a few
    microseconds on this kind of VM, some of them on the execution's path.
    Writing one byte of each such mapping to itself, through /proc/self/mem
    as a debugger sets a breakpoint, gives it one anonymous page (the same
    bytes); the mapping stays read-only. A kernel that refuses writes
    through /proc/self/mem, or a process that may not open it (see
    zygote), leaves things as they were.
    """
    try:
        mem = os.open("/proc/self/mem", os.O_RDWR)
    except OSError:
        return
    try:
        with open("/proc/self/maps", "rb") as maps:
            for line in maps:
                f = line.split()
                if len(f) < 6 or f[1] not in (b"r-xp", b"r--p") or not f[5].startswith(b"/"):
                    continue
                start = int(f[0].split(b"-")[0], 16)
                try:
                    os.pwrite(mem, os.pread(mem, 1, start), start)
                except OSError:
                    pass
    finally:
        os.close(mem)


def zygote(ctl_fd, isolated, scratch):
    # First, while /proc/self/mem is still this process's to open: not
    # dumpable, its /proc files belong to a root that a user namespace does
    # not map. No code has run here yet.
    map_text_at_fork()
    # Not dumpable: the code's processes (same uid) cannot read or write this
    # one's memory or descriptors through /proc; ptrace is also denied by
    # seccomp. In production this process is the PID namespace's init.
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    # Descriptors that codecell's own process inherited without
    # close-on-exec, from whatever started it, come this far (neither
    # os/exec nor bubblewrap closes them); none is the code's to use.
    os.closerange(3, ctl_fd)
    os.closerange(ctl_fd + 1, os.sysconf("SC_OPEN_MAX"))
    # Python's own SIGINT handler would let the code raise KeyboardInterrupt
    # here; as init, a signal left at its default is not delivered at all.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Orphans of an execution re-parent here so they can be reaped.
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    ctl = _socket.socket(fileno=ctl_fd)
    preload(_PRELOAD)
    warm_up()
    settle()
    baseline = inherited()
    ctl.send(_json_dumps({"type": "ready", "pid": os.getpid(), "preload": preload_report()}).encode())
    while True:
        try:
            pid = prefork(ctl)
        except OSError:
            os._exit(0)  # the host went away
        _, status = os.waitpid(pid, 0)
        if not isolated:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        clean = kill_others(isolated)
        for d in scratch:
            clean = wipe(d) and clean
        # A zygote whose limits or scheduling the code changed (prlimit,
        # sched_setscheduler, ioprio_set on pid 1) would hand them to the
        # next execution: not clean.
        clean = clean and inherited() == baseline
        # Formatted, not json.dumps of a dict: fewer objects (see above).
        if os.WIFSIGNALED(status):
            how = b'"signal":%d' % os.WTERMSIG(status)
        else:
            how = b'"status":%d' % os.WEXITSTATUS(status)
        try:
            ctl.send(b'{"type":"exited","pid":%d,"clean":%s,%s}' % (pid, b"true" if clean else b"false", how))
        except OSError:
            os._exit(0)


# What the host writes on stdin just before a --forkserver child's exec frame,
# followed by the sync token of that child's "ready" frame and a newline.
SYNC = b"\x00codecell-sync "


_RLIMITS = [getattr(resource, name) for name in sorted(dir(resource)) if name.startswith("RLIMIT_")]

# ioprio_get(2), which Python does not wrap, by machine; None elsewhere.
_NR_IOPRIO_GET = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
IOPRIO_WHO_PROCESS = 1


def inherited():
    """What a forked child inherits from this process that another process
    of the same user may change from outside (prlimit, setpriority,
    sched_setaffinity, sched_setscheduler, ioprio_set): the code cannot
    touch the fork server's memory, but these it can, and the next execution
    would start with them (SCHED_IDLE, or the idle I/O class, would starve
    every later execution).

    The limits are read as /proc's one table where it can be read: one
    object where sixteen getrlimit calls made sixteen tuples and their
    integers (each a page the fork server writes, so a fault, at every
    fork).
    """
    try:
        fd = os.open("/proc/self/limits", os.O_RDONLY)
        try:
            state = [os.read(fd, 8192)]
        finally:
            os.close(fd)
    except OSError:
        state = [resource.getrlimit(which) for which in _RLIMITS]
    try:
        state.append(os.getpriority(os.PRIO_PROCESS, 0))
        state.append(os.sched_getaffinity(0))
        # The policy carries SCHED_RESET_ON_FORK; the parameters, the
        # real-time priority.
        state.append(os.sched_getscheduler(0))
        state.append(os.sched_getparam(0))
    except OSError:
        state.append(None)
    if _NR_IOPRIO_GET is not None:
        # -1 where the kernel (gVisor's, say) has no I/O priorities: the same
        # after every execution.
        L = ctypes.c_long
        state.append(_libc.syscall(L(_NR_IOPRIO_GET), L(IOPRIO_WHO_PROCESS), L(0)))
    return state


def forkserver(scratch):
    """Serves executions one after another over stdin and stdout, as the
    init of a gVisor container, where descriptors cannot be passed.

    Each execution runs in a child forked ahead of need, which inherits
    stdin and stdout and serves one execution over them; this process never
    runs code and reads nothing from stdin. While a child lives the channel
    is the child's; once it has exited this process kills every other
    process (it is the PID namespace's init, so nothing escapes it), wipes
    the scratch dirs, reaps, and only then writes "exited" and forks the next
    child. Two random tokens per child keep what a finished execution left
    on the channel away from the next one:

      sync  chosen before the fork, so the child knows it and no earlier
            execution does: the child discards stdin up to SYNC + sync, which
            the host writes right before the exec frame (stale answers to an
            earlier execution's calls, or bytes it left, go with it).
      key   chosen after the fork, so the child's code never has it: the
            "exited" frame carries it, and the host believes no other.
    """
    # Not dumpable: the code's processes (same uid) cannot read this one's
    # memory (the next token) or reopen its descriptors through /proc.
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    # As init, a signal left at its default is not delivered at all.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    chan = Channel(-1, 1)  # writes only: stdin belongs to the children
    # Every child shares the open file descriptions of stdin and stdout
    # with this process: their flags are put back after each execution
    # (code that made stdin non-blocking would end the next child's read).
    flags = [fcntl.fcntl(fd, fcntl.F_GETFL) for fd in (0, 1)]
    preload(_PRELOAD)
    warm_up()
    settle()
    baseline = inherited()
    first = True
    while True:
        sync = os.urandom(16).hex()
        pid = fork()
        if pid == 0:
            forkserver_child(sync)  # never returns
        key = os.urandom(16).hex()
        ready = {"type": "ready", "sync": sync, "key": key}
        if first:
            ready["preload"], first = preload_report(), False
        chan.send(ready)
        _, status = os.waitpid(pid, 0)
        clean = kill_others(True)
        for d in scratch:
            clean = wipe(d) and clean
        # After the kill, so nothing can change them any more: a fork
        # server whose limits or scheduling the code changed is not clean
        # (see inherited); the channel's flags (O_NONBLOCK, O_ASYNC, its
        # owner for SIGIO) are reset.
        clean = clean and inherited() == baseline
        for fd, fl in zip((0, 1), flags):
            try:
                fcntl.fcntl(fd, fcntl.F_SETFL, fl)
                fcntl.fcntl(fd, fcntl.F_SETOWN, 0)
            except OSError:
                clean = False
        report = {"type": "exited", "key": key, "clean": clean}
        if os.WIFSIGNALED(status):
            report["signal"] = os.WTERMSIG(status)
        else:
            report["status"] = os.WEXITSTATUS(status)
        chan.send(report)


def forkserver_child(sync):
    """A --forkserver child: waits for the host's sync mark, then serves one
    execution over stdin and stdout."""
    marker = SYNC + sync.encode() + b"\n"
    # The channel on descriptors of its own, closed on exec; the output
    # pipes go on 1 and 2 and /dev/null on 0 now, ahead of need: under
    # gVisor each system call and page fault is a trip to its kernel.
    rfd, wfd = os.dup(0), os.dup(1)
    chan = Channel(rfd, wfd)
    become_child()
    pipes = capture_output(chan, None)
    buf = b""
    try:
        while True:
            data = os.read(rfd, 65536)
            if not data:
                os._exit(0)  # the host went away
            buf += data
            i = buf.find(marker)
            if i >= 0:
                buf = buf[i + len(marker):]
                break
            buf = buf[-(len(marker) - 1):]
    except OSError:
        os._exit(0)
    child_main(chan, {}, header=buf, pipes=pipes)


def main(argv):
    # The codecell package (next to this file) and the generated servers
    # package (--gen) are importable by the code.
    global _GEN, _rpc, _display, _tables, _PRELOAD
    if "--gen" in argv:
        _GEN = os.path.abspath(argv[argv.index("--gen") + 1])
        sys.path.insert(0, _GEN)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    # The namespace's saved skills (--skills DIR) are the package "skills",
    # one subpackage per skill. It is registered rather than put on sys.path,
    # so it is the same at every level and a "skills" directory in the
    # workspace cannot stand in for it.
    if "--skills" in argv:
        import importlib.machinery
        import importlib.util
        spec = importlib.machinery.ModuleSpec("skills", None, is_package=True)
        spec.submodule_search_locations = [argv[argv.index("--skills") + 1]]
        skills = importlib.util.module_from_spec(spec)
        skills.__doc__ = "Saved skills: from skills.<name> import <function>."
        sys.modules["skills"] = skills
    from codecell import _display, _rpc, _tables
    if "--preload" in argv:
        _PRELOAD = [m for m in argv[argv.index("--preload") + 1].split(",") if m]
    if "--preload-skipped" in argv:
        _preloaded["failed"] = [{"module": "*", "error": argv[argv.index("--preload-skipped") + 1][:300]}]
    scratch = []
    isolated = "--isolated" in argv
    if "--scratch" in argv:
        scratch = argv[argv.index("--scratch") + 1].split(":")
    if "--zygote" in argv:
        zygote(int(argv[argv.index("--zygote") + 1]), isolated, scratch)
    elif "--forkserver" in argv:
        forkserver(scratch)
    else:
        sys.stderr.write("usage: codecell_runner.py --zygote FD [--isolated] [--scratch DIRS]"
                         " | --forkserver [--scratch DIRS]"
                         " [--gen DIR] [--skills DIR] [--preload MODULES]\n")
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
