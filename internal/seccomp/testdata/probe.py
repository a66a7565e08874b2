import ctypes, errno, json, mmap, os, platform, signal, socket, subprocess, sys, threading

NR = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
M = (1 << 64) - 1

def sc(name, *args):
    """Make a raw system call; return 0 or the errno."""
    return sc_nr(NR[name], *args)

def sc_nr(nr, *args):
    """sc for a call by its number."""
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(a & M) for a in args])
    return ctypes.get_errno() if r == -1 else 0

# Calls the kernel makes without asking seccomp, by number: x86-64's uprobe
# (Linux 6.16), which only a uprobe trampoline can make.
UNFILTERED = {"x86_64": {336}}.get(platform.machine(), set())

def unnamed():
    """Every call number the table does not name, up to some past its last
    and 1000: 0 if one of them reached a call (an answer other than ENOSYS),
    else ENOSYS."""
    known = set(NR.values()) | UNFILTERED
    nrs = [n for n in range(max(known) + 33) if n not in known] + [1000]
    return 0 if any(sc_nr(n) != errno.ENOSYS for n in nrs) else errno.ENOSYS

def sock(*args):
    socket.socket(*args).close()
    return 0

def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    return 0 if os.waitstatus_to_exitcode(status) == 7 else "error: status %d" % status

def thread():
    out = []
    t = threading.Thread(target=lambda: out.append(1))
    t.start()
    t.join()
    return 0 if out == [1] else "error: thread did not run"

def run_true():
    return subprocess.run(["/usr/bin/true"]).returncode and "error: /usr/bin/true failed"

def unshare():
    if not hasattr(os, "unshare"):
        return "skip: no os.unshare before Python 3.12"
    os.unshare(os.CLONE_NEWUSER)
    return 0

def int80():
    """getpid through the i386 ABI (int 0x80)."""
    if platform.machine() != "x86_64":
        return "skip: x86-64 only"
    code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])  # mov eax, 20; int 0x80; ret
    m = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    m.write(code)
    f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
    r = f()
    return 0 if r > 0 else r

def x32():
    if platform.machine() != "x86_64":
        return "skip: x86-64 only"
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(0x40000000 | NR["getpid"]))
    return ctypes.get_errno() if r == -1 else 0

def outcome(fn):
    try:
        r = fn()
    except OSError as e:
        r = e.errno
    except BaseException as e:
        return "error: %r" % e
    if isinstance(r, str):
        return r
    return "ok" if r == 0 else errno.errorcode.get(r, "errno %d" % r)

def probe(fn):
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        os.write(wfd, outcome(fn).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return out or "error: no result"
