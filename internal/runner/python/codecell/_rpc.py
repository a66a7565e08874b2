"""Calls from the code to the host over the sandbox's private channel.

A call is a frame {"type": "call", "id", "method", "params"}; the host answers
with {"type": "reply", "id", "ok", "result" | "error"}. Calls may be made from
many threads and from asyncio at once: one reader thread routes each reply to
its caller by id, so N calls made together take about as long as the slowest.
"""

import base64
import builtins
import itertools
import json
import threading

# The runtime's own json functions, bound before any user code runs: code
# that replaces json.dumps or json.loads (a mock, a monkeypatch) changes its
# own json, not the frames the runtime sends and reads.
_json_dumps, _json_loads = json.dumps, json.loads

_chan = None  # set by the runner before the code runs
_lock = threading.Lock()
_pending = {}  # id -> _Waiter
_ids = itertools.count(1)
_reader = None
# A calling thread is reading the channel for its own answer (request's
# fast path); guarded by _lock, as _reader is.
_direct = False
_closed = None  # the reason the channel ended, once it has
# In a session, frames other than replies (the next exec) go to the runner
# through this; None says the channel ended.
_on_frame = None


class ToolError(Exception):
    """An upstream tool reported an error (or could not be reached)."""

    def __init__(self, message, server=None, tool=None):
        super().__init__(message)
        self.message = message
        self.server = server
        self.tool = tool

    def __str__(self):
        if self.server and self.tool:
            return "%s.%s: %s" % (self.server, self.tool, self.message)
        return self.message


class ApprovalDenied(ToolError):
    """A person declined a call that needs approval (or could not be asked):
    the call did not run."""


# The code catches them as servers.ToolError and servers.ApprovalDenied (the
# generated package re-exports them), so tracebacks name them so rather than
# by this private module.
ToolError.__module__ = "servers"
ApprovalDenied.__module__ = "servers"


class Image:
    """An image a tool returned."""

    def __init__(self, data: bytes, mime_type: str):
        self.data = data
        self.mime_type = mime_type

    def __repr__(self):
        return "Image(mime_type=%r, %d bytes)" % (self.mime_type, len(self.data))


class _Waiter:
    """Where a call's answer goes. A thread's call gets its event from _send
    only when another thread is to read the answer for it: a call that reads
    its own answer (request's fast path) has no use for one, and an Event
    (a Condition and two locks) costs a tenth of such a call."""
    __slots__ = ("event", "reply", "loop", "future")

    def __init__(self, loop=None):
        self.reply = None
        self.loop = loop
        self.event = None
        self.future = None if loop is None else loop.create_future()

    def resolve(self, reply):
        if self.loop is None:
            self.reply = reply
            if self.event is not None:
                self.event.set()
        else:
            def done(f=self.future, r=reply):
                if not f.done():
                    f.set_result(r)
            try:
                self.loop.call_soon_threadsafe(done)
            except RuntimeError:
                pass  # the loop is closed; nobody waits any more


def _dispatch(msg):
    """Hands a frame read from the channel to whoever waits for it."""
    if msg.get("type") != "reply":
        if _on_frame is not None:
            _on_frame(msg)
        return
    with _lock:
        w = _pending.pop(msg.get("id"), None)
    if w is not None:
        w.resolve(msg)


def _fail(e):
    """The channel ended: every call waiting, and every later one, fails."""
    global _closed
    with _lock:
        _closed = "the channel to the host ended: %s" % (e,)
        waiters = list(_pending.values())
        _pending.clear()
    for w in waiters:
        w.resolve({"ok": False, "error": {"kind": "RuntimeError", "message": _closed}})
    if _on_frame is not None:
        _on_frame(None)


def _read_replies():
    try:
        while True:
            _dispatch(_chan.recv())
    except BaseException as e:
        _fail(e)


def _start_reader_locked():
    global _reader
    _reader = threading.Thread(target=_read_replies, name="codecell-rpc", daemon=True)
    _reader.start()


def start_reader(on_frame):
    """Starts the reader thread now, handing frames other than replies to
    on_frame (a session's runner waits for its next exec there)."""
    global _on_frame
    _on_frame = on_frame
    with _lock:
        if _reader is None and not _direct:
            _start_reader_locked()


# MAX_CALL_FRAME is the largest frame the host reads (channel.DefaultMaxFrame
# in internal/channel, 8 MiB); a call's frame past it fails the call.
MAX_CALL_FRAME = 8 << 20


def _send(method, params, waiter, direct_ok=False):
    """Sends a call. It returns True when the caller is to read the
    channel itself until its answer is in (see request); otherwise the
    reader thread answers it, and is started if need be."""
    global _direct
    if _chan is None:
        raise RuntimeError("codecell: not running inside a codecell sandbox")
    with _lock:
        if _closed:
            raise RuntimeError(_closed)
        call_id = next(_ids)
        direct = direct_ok and _reader is None and not _direct
        if waiter.loop is None and not direct:
            # Set before the waiter is pending, under _lock, as whoever
            # resolves it takes it from _pending under _lock.
            waiter.event = threading.Event()
        _pending[call_id] = waiter
        if direct:
            _direct = True
        elif _reader is None and not _direct:
            _start_reader_locked()
    try:
        frame = _chan.encode({"type": "call", "id": call_id, "method": method, "params": params})
        if len(frame) - 4 > MAX_CALL_FRAME:
            # The host ends an execution whose frame is over its bound, as
            # a broken channel: this call alone fails, where the code can
            # catch it.
            raise ValueError(
                "codecell: this call's arguments are %d bytes of JSON, over the limit of %d "
                "bytes per call; pass a workspace file's path instead" % (len(frame) - 4, MAX_CALL_FRAME))
        _chan.send_frame(frame)
    except BaseException:
        with _lock:
            _pending.pop(call_id, None)
        if direct:
            _end_direct()
        raise
    return direct


def _end_direct():
    """A calling thread stops reading the channel: calls still waiting
    (made meanwhile from other threads or from asyncio) get the reader
    thread, which from then on reads every answer."""
    global _direct
    with _lock:
        _direct = False
        if _pending and _reader is None and _closed is None:
            _start_reader_locked()


_ERRORS = {
    "ToolError": None,
    "PermissionError": PermissionError,
    "TimeoutError": TimeoutError,
    "ValueError": ValueError,
    "LookupError": LookupError,
    "KeyError": LookupError,
    "ImportError": ImportError,
    "RuntimeError": RuntimeError,
    "TypeError": TypeError,
    "AttributeError": AttributeError,
}


def _result(reply):
    if reply.get("ok"):
        return reply.get("result")
    err = reply.get("error") or {}
    kind, message = err.get("kind", "RuntimeError"), err.get("message", "unknown error")
    data = err.get("data") or {}
    if kind == "ToolError":
        raise ToolError(message, data.get("server"), data.get("tool"))
    if kind == "ApprovalDenied":
        raise ApprovalDenied(message, data.get("server"), data.get("tool"))
    raise _ERRORS.get(kind, RuntimeError)(message)


def request(method, params):
    """Calls the host and waits for its answer.

    While no other call is in flight and no reader thread was needed yet,
    the calling thread reads the answer itself: handing each answer from a
    reader thread to the caller cost a thread switch per call, a quarter of
    a call's time when calls come one after another. Calls made meanwhile
    from other threads are answered as it reads; when it is done, the reader
    thread takes over for good.
    """
    w = _Waiter()
    if not _send(method, params, w, direct_ok=True):
        w.event.wait()
        return _result(w.reply)
    try:
        while w.reply is None:
            try:
                msg = _chan.recv()
            except (OSError, EOFError, ValueError) as e:
                _fail(e)
                break
            _dispatch(msg)
    finally:
        _end_direct()
    return _result(w.reply)


async def arequest(method, params):
    """Calls the host from asyncio."""
    # Imported here, not at the top: code that awaits has imported it
    # already, and the fork server stays 7 MB smaller without it (asyncio
    # pulls in ssl), which every fork and every exit pays for.
    import asyncio
    w = _Waiter(asyncio.get_running_loop())
    _send(method, params, w)
    return _result(await w.future)


# The first characters of every text json.loads accepts, leading white
# space aside (NaN and Infinity included).
_JSON_START = frozenset('{["-0123456789tfnNI')


def _decode(result):
    """A tool's answer as Python: structured content if any, else each
    content item (text parsed as JSON when it parses, images as Image)."""
    if result is None:
        return None
    if result.get("structured") is not None:
        return result["structured"]
    items = []
    for c in result.get("content") or []:
        kind = c.get("type")
        if kind == "text":
            text = c.get("text", "")
            # Only text that can start a JSON value is tried as JSON: a
            # failed json.loads raises, and the exception (7 us) cost plain
            # text, most tools' answers, a sixth of a call's interpreter time.
            head = text.lstrip(" \t\n\r")[:1]
            if head and head in _JSON_START:
                try:
                    items.append(_json_loads(text))
                    continue
                except ValueError:
                    pass
            items.append(text)
        elif kind in ("image", "audio"):
            try:
                data = base64.b64decode(c.get("data", ""))
            except ValueError:
                data = b""
            items.append(Image(data, c.get("mimeType", "")))
        elif kind == "resource":
            items.append(c.get("resource"))
        else:
            items.append(c)
    if not items:
        return None
    return items[0] if len(items) == 1 else items


def call(server, tool, arguments):
    """Calls an upstream tool; used by the generated servers package."""
    return _decode(request("tool", {"server": server, "tool": tool, "arguments": arguments}))


async def acall(server, tool, arguments):
    """Calls an upstream tool from asyncio."""
    return _decode(await arequest("tool", {"server": server, "tool": tool, "arguments": arguments}))
