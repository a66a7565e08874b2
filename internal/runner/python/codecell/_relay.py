"""The relay from a loopback port to codecell's egress proxy.

A sandbox with a network has no interface but loopback; its way out is the
proxy's Unix socket. Clients take an HTTP proxy by host and port
(HTTP_PROXY), not by socket path, hence this relay: each connection to the
port is joined to a connection to the socket. It is no boundary: the proxy
on the host decides, whatever comes through. The same source serves the
runner (in the code's process) and the installer's commands (run with
-I -S -c, so it imports only the standard library, and only inside
functions that use it).
"""


def serve(sock_path, port=0):
    """Listens on 127.0.0.1:port (0: any), relays in a daemon thread, and
    returns the port; raises OSError when the port is taken."""
    import socket
    import threading
    ln = socket.socket()
    ln.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        ln.bind(("127.0.0.1", port))
        ln.listen(64)
    except OSError:
        ln.close()
        raise
    threading.Thread(target=_accept, args=(ln, sock_path), daemon=True, name="codecell-egress").start()
    return ln.getsockname()[1]


def _accept(ln, sock_path):
    import socket
    import threading
    while True:
        try:
            c, _ = ln.accept()
        except OSError:
            return
        u = socket.socket(socket.AF_UNIX)
        try:
            u.connect(sock_path)
        except OSError:
            c.close()
            u.close()
            continue
        threading.Thread(target=_pipe, args=(c, u), daemon=True).start()
        threading.Thread(target=_pipe, args=(u, c), daemon=True).start()


def _pipe(a, b):
    import socket
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
