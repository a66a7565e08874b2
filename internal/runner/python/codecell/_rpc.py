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

_chan = None  # set by the runner before the code runs
_lock = threading.Lock()
_pending = {}  # id -> _Waiter
_ids = itertools.count(1)
_reader = None
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


# The code catches it as servers.ToolError (the generated package re-exports
# it), so tracebacks name it so rather than by this private module.
ToolError.__module__ = "servers"


class Image:
    """An image a tool returned."""

    def __init__(self, data: bytes, mime_type: str):
        self.data = data
        self.mime_type = mime_type

    def __repr__(self):
        return "Image(mime_type=%r, %d bytes)" % (self.mime_type, len(self.data))


class _Waiter:
    __slots__ = ("event", "reply", "loop", "future")

    def __init__(self, loop=None):
        self.reply = None
        self.loop = loop
        if loop is None:
            self.event = threading.Event()
            self.future = None
        else:
            self.event = None
            self.future = loop.create_future()

    def resolve(self, reply):
        if self.loop is None:
            self.reply = reply
            self.event.set()
        else:
            def done(f=self.future, r=reply):
                if not f.done():
                    f.set_result(r)
            try:
                self.loop.call_soon_threadsafe(done)
            except RuntimeError:
                pass  # the loop is closed; nobody waits any more


def _read_replies():
    global _closed
    try:
        while True:
            msg = _chan.recv()
            if msg.get("type") != "reply":
                if _on_frame is not None:
                    _on_frame(msg)
                continue
            with _lock:
                w = _pending.pop(msg.get("id"), None)
            if w is not None:
                w.resolve(msg)
    except BaseException as e:
        with _lock:
            _closed = "the channel to the host ended: %s" % (e,)
            waiters = list(_pending.values())
            _pending.clear()
        for w in waiters:
            w.resolve({"ok": False, "error": {"kind": "RuntimeError", "message": _closed}})
        if _on_frame is not None:
            _on_frame(None)


def start_reader(on_frame):
    """Starts the reader thread now, handing frames other than replies to
    on_frame (a session's runner waits for its next exec there)."""
    global _reader, _on_frame
    _on_frame = on_frame
    with _lock:
        if _reader is None:
            _reader = threading.Thread(target=_read_replies, name="codecell-rpc", daemon=True)
            _reader.start()


def _send(method, params, waiter):
    global _reader
    if _chan is None:
        raise RuntimeError("codecell: not running inside a codecell sandbox")
    with _lock:
        if _closed:
            raise RuntimeError(_closed)
        if _reader is None:
            _reader = threading.Thread(target=_read_replies, name="codecell-rpc", daemon=True)
            _reader.start()
        call_id = next(_ids)
        _pending[call_id] = waiter
    _chan.send({"type": "call", "id": call_id, "method": method, "params": params})


_ERRORS = {
    "ToolError": None,
    "PermissionError": PermissionError,
    "TimeoutError": TimeoutError,
    "ValueError": ValueError,
    "LookupError": LookupError,
    "KeyError": LookupError,
    "ImportError": ImportError,
    "RuntimeError": RuntimeError,
}


def _result(reply):
    if reply.get("ok"):
        return reply.get("result")
    err = reply.get("error") or {}
    kind, message = err.get("kind", "RuntimeError"), err.get("message", "unknown error")
    data = err.get("data") or {}
    if kind == "ToolError":
        raise ToolError(message, data.get("server"), data.get("tool"))
    raise _ERRORS.get(kind, RuntimeError)(message)


def request(method, params):
    """Calls the host and waits for its answer."""
    w = _Waiter()
    _send(method, params, w)
    w.event.wait()
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
            try:
                items.append(json.loads(text))
            except ValueError:
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
