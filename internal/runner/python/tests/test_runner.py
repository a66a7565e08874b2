"""Unit tests of the runner's pure functions (codecell_runner.py).

Run by the Go test TestPythonUnits (internal/runner), or by hand:

    /usr/bin/python3 -B -m unittest discover -s internal/runner/python/tests

These files are not embedded in the runner (runner.go embeds python/*.py
and python/codecell/*.py only). Whatever changes a process's state (limits,
signal handling) runs in a subprocess.
"""

import _ast
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER_DIR = os.path.dirname(HERE)
sys.path.insert(0, RUNNER_DIR)

import codecell_runner as r  # noqa: E402


def parse(code):
    return compile(code, "<test>", "exec", _ast.PyCF_ONLY_AST)


class RunCellTest(unittest.TestCase):
    def run_cell(self, code, glb=None):
        return r.run_cell(code, {} if glb is None else glb, "<cell>")

    def test_last_expression_is_the_value(self):
        self.assertEqual(self.run_cell("x = 2\nx * 3"), (True, 6))

    def test_no_expression_no_value(self):
        self.assertEqual(self.run_cell("x = 2"), (False, None))

    def test_empty_cell(self):
        self.assertEqual(self.run_cell(""), (False, None))

    def test_result_wins_over_the_last_expression(self):
        glb = {}
        got = self.run_cell("result = {'a': 1}\nseen = []\nseen.append(1)", glb)
        self.assertEqual(got, (True, {"a": 1}))
        self.assertEqual(glb["seen"], [1], "the last expression still runs")

    def test_result_set_to_none_counts(self):
        self.assertEqual(self.run_cell("result = None\n5"), (True, None))

    def test_result_set_in_a_function_counts(self):
        self.assertEqual(self.run_cell("def f():\n    global result\n    result = 7\nf()"), (True, 7))

    def test_session_keeps_an_earlier_result_out(self):
        glb = {}
        self.assertEqual(self.run_cell("result = 1", glb), (True, 1))
        self.assertEqual(self.run_cell("y = 3", glb), (False, None))
        self.assertEqual(self.run_cell("y + 1", glb), (True, 4))

    def test_session_result_set_again_to_the_same_object(self):
        glb = {}
        self.run_cell("result = [1]", glb)
        self.assertEqual(self.run_cell("result = result", glb), (True, [1]))
        self.assertEqual(self.run_cell("result.append(2)\nresult", glb), (True, [1, 2]))

    def test_session_result_in_the_last_expression(self):
        glb = {}
        self.run_cell("result = 1", glb)
        self.assertEqual(self.run_cell("(result := 5)", glb), (True, 5))

    def test_syntax_error_raises(self):
        with self.assertRaises(SyntaxError):
            self.run_cell("def (")

    def test_source_is_in_linecache_for_tracebacks(self):
        import linecache
        self.run_cell("a = 1\nb = 2")
        self.assertEqual(linecache.getline("<cell>", 2), "b = 2")


    def test_a_script_names_its_file_in_tracebacks(self):
        # What execute does with an exec frame's filename (execute_code_file,
        # codecell exec FILE): the traceback names the file and shows its line.
        try:
            r.run_cell("x = 1\nraise ValueError(x)", {}, "tools/job.py")
        except ValueError as e:
            tb = r.user_traceback(e)
        self.assertIn('File "tools/job.py", line 2, in <module>\n    raise ValueError(x)\n', tb)
        self.assertNotIn("<cell>", tb)


class AssignsResultTest(unittest.TestCase):
    def test_cases(self):
        cases = [
            ("result = 1", True),
            ("result += 1", True),
            ("for result in []: pass", True),
            ("def f():\n    result = 2", True),
            ("with open('x') as result: pass", True),
            ("(result := 3)", True),
            ("x = result", False),
            ("print(result)", False),
            ("results = 1", False),
            ("del result", False),
        ]
        for code, want in cases:
            with self.subTest(code=code):
                self.assertEqual(r.assigns_result(parse(code)), want)


class EncodeResultTest(unittest.TestCase):
    def test_json_value(self):
        self.assertEqual(r.encode_result({"a": [1, 2.5, None]}, 100), {"kind": "json", "value": {"a": [1, 2.5, None]}})

    def test_tuple_becomes_a_list(self):
        self.assertEqual(r.encode_result((1, 2), 100), {"kind": "json", "value": [1, 2]})

    def test_not_json_is_its_repr(self):
        self.assertEqual(r.encode_result({1, 2}, 100), {"kind": "repr", "value": "{1, 2}"})

    def test_nan_is_not_json(self):
        self.assertEqual(r.encode_result(float("nan"), 100), {"kind": "repr", "value": "nan"})

    def test_too_long_is_a_cut_repr(self):
        got = r.encode_result("x " * 100, 50)
        self.assertEqual(got["kind"], "repr")
        self.assertTrue(got["value"].startswith("'x x"))
        self.assertIn("characters dropped]", got["value"])

    def test_hostile_repr(self):
        class Bad:
            def __repr__(self):
                raise ValueError("no")
        self.assertEqual(r.encode_result(Bad(), 100), {"kind": "repr", "value": "<unrepresentable Bad: no>"})


class CutTest(unittest.TestCase):
    def test_short_text_is_kept(self):
        self.assertEqual(r.cut_text("abc", 3), "abc")

    def test_cut_drops_a_split_value(self):
        got = r.cut_text("mail dave@example.org now", 12)
        self.assertEqual(got, "mail ... [20 characters dropped]")

    def test_cut_error_cuts_message_and_traceback(self):
        e = r.cut_error({"type": "E", "message": "m" * 50, "traceback": "t" * 50}, {"result_bytes": 10})
        self.assertEqual(e["type"], "E")
        self.assertIn("dropped", e["message"])
        self.assertIn("dropped", e["traceback"])


class UserTracebackTest(unittest.TestCase):
    def raise_in_cell(self, code, glb):
        try:
            r.run_cell(code, glb, "<cell>")
        except Exception as e:
            return e
        self.fail("no exception")

    def test_runner_frames_are_removed(self):
        # cut_text(None, 1) fails inside codecell_runner.py.
        e = self.raise_in_cell("def g():\n    return cut_text(None, 1)\ng()", {"cut_text": r.cut_text})
        tb = r.user_traceback(e)
        self.assertIn('File "<cell>", line 3', tb)
        self.assertIn('File "<cell>", line 2, in g', tb)
        self.assertNotIn("codecell_runner.py", tb)
        self.assertIn("TypeError", tb)

    def test_generated_servers_frames_are_removed(self):
        with tempfile.TemporaryDirectory() as gen:
            os.makedirs(os.path.join(gen, "servers"))
            path = os.path.join(gen, "servers", "fake.py")
            with open(path, "w") as f:
                f.write("def call():\n    raise ValueError('from the tool')\n")
            glb = {}
            with open(path) as f:
                exec(compile(f.read(), path, "exec"), glb)
            old, r._GEN = r._GEN, gen
            try:
                e = self.raise_in_cell("call()", {"call": glb["call"]})
                tb = r.user_traceback(e)
            finally:
                r._GEN = old
        self.assertIn('File "<cell>"', tb)
        self.assertNotIn("fake.py", tb)
        self.assertIn("ValueError: from the tool", tb)

    def test_chained_exceptions_are_stripped_too(self):
        code = "try:\n    cut_text(None, 1)\nexcept TypeError as e:\n    raise KeyError('k') from e"
        e = self.raise_in_cell(code, {"cut_text": r.cut_text})
        tb = r.user_traceback(e)
        self.assertIn("direct cause", tb)
        self.assertNotIn("codecell_runner.py", tb)


class ErrorOfTest(unittest.TestCase):
    def test_plain(self):
        e = r.error_of(ValueError("bad"))
        self.assertEqual((e["type"], e["message"]), ("ValueError", "bad"))
        self.assertIsInstance(e["traceback"], str)

    def test_memory_error(self):
        e = r.error_of(MemoryError())
        self.assertEqual((e["type"], e["message"]), ("MemoryLimit", "the code ran out of its memory limit"))

    def test_unprintable(self):
        class Bad(Exception):
            def __str__(self):
                raise RuntimeError
        self.assertEqual(r.error_of(Bad())["message"], "<unprintable>")

    def test_module_hints(self):
        cases = [
            ("skills.mine", "list_skills lists this namespace's skills"),
            ("servers.github", "search_tools finds the upstream tools"),
            ("numpy.linalg", "call install_dependencies with packages=['numpy']"),
        ]
        for name, hint in cases:
            with self.subTest(name=name):
                exc = ModuleNotFoundError("No module named %r" % name, name=name)
                e = r.error_of(exc)
                self.assertEqual(e["type"], "ModuleNotFoundError")
                self.assertTrue(e["message"].startswith("No module named %r; " % name), e["message"])
                self.assertIn(hint, e["message"])

    def test_memory_hints(self):
        # Issue #30: a session near its limit failed `import numpy` with a
        # long ImportError that did not say memory was the cause.
        msg = ("Error importing numpy: you should not try to import numpy from its source directory ...\n"
               "Original error was: libopenblas.so.0: failed to map segment from shared object")
        for exc in (ImportError(msg), OSError("[Errno 12] Cannot allocate memory")):
            with self.subTest(exc=exc):
                e = r.error_of(exc, {"memory": 512 << 20})
                self.assertTrue(e["message"].startswith(str(exc) + "; "), e["message"])
                self.assertIn("sandbox.memory = 512 MiB", e["message"])
        self.assertNotIn("sandbox.memory", r.error_of(ImportError("cannot import name x"), {"memory": 1 << 29})["message"])

    def test_shell_command_hints(self):
        # A new user's first cell is often a shell or notebook line.
        cases = [
            ("pip install pandas numpy\n", "call install_dependencies with packages=['pandas', 'numpy']"),
            ("!pip install -q requests", "call install_dependencies with packages=['requests']"),
            ("%pip install polars", "call install_dependencies with packages=['polars']"),
            ("uv pip install httpx", "call install_dependencies with packages=['httpx']"),
            ("pip install", "call install_dependencies (after"),
            ("!ls -la", "subprocess.run(['ls', ...])"),
        ]
        for line, hint in cases:
            with self.subTest(line=line):
                try:
                    compile(line, "<cell>", "exec")
                except SyntaxError as exc:
                    e = r.error_of(exc)
                self.assertTrue(e["message"].startswith("invalid syntax (<cell>, line 1); "), e["message"])
                self.assertIn(hint, e["message"])
        for line in ("def f(:", "pip = 1 +", "x = (\n)\n)"):
            with self.subTest(line=line):
                try:
                    compile(line, "<cell>", "exec")
                except SyntaxError as exc:
                    e = r.error_of(exc)
                self.assertNotIn("; ", e["message"])

    def test_import_error_without_a_name_has_no_hint(self):
        self.assertEqual(r.error_of(ImportError("cannot import name x"))["message"], "cannot import name x")

    def test_thread_limit_hints(self):
        e = r.error_of(RuntimeError("can't start new thread"), {})
        self.assertRegex(e["message"], r"^can't start new thread: the host refused another thread \(\d+ threads in this process\)$")
        e = r.error_of(RuntimeError("can't start new thread"), {"memory": 256 << 20, "pids": 64})
        self.assertIn("sandbox.memory = 256 MiB", e["message"])
        self.assertIn("sandbox.pids = 64", e["message"])
        self.assertIn("ThreadPoolExecutor(max_workers=...)", e["message"])


class ChannelTest(unittest.TestCase):
    def pipe_channel(self):
        rfd, wfd = os.pipe()
        self.addCleanup(os.close, rfd)
        self.addCleanup(os.close, wfd)
        return r.Channel(rfd, wfd), rfd, wfd

    def test_encode_is_length_then_json(self):
        frame = r.Channel.encode({"type": "x", "s": "é"})
        (n,) = struct.unpack(">I", frame[:4])
        self.assertEqual(n, len(frame) - 4)
        self.assertEqual(json.loads(frame[4:].decode("utf-8")), {"type": "x", "s": "é"})
        self.assertIn("é".encode("utf-8"), frame, "not ASCII-escaped")

    def test_encode_falls_back_to_repr(self):
        frame = r.Channel.encode({"type": "x", "v": {1}})
        self.assertEqual(json.loads(frame[4:])["v"], "{1}")

    def test_round_trip_two_frames_in_one_read(self):
        chan, _, _ = self.pipe_channel()
        chan.send({"type": "a", "n": 1})
        chan.send({"type": "b", "n": 2})
        self.assertEqual(chan.recv(), {"type": "a", "n": 1})
        self.assertEqual(chan.recv(), {"type": "b", "n": 2})

    def test_recv_with_a_header_already_read(self):
        chan, _, wfd = self.pipe_channel()
        frame = r.Channel.encode({"type": "exec", "code": "1"})
        os.write(wfd, frame[2:])
        self.assertEqual(chan.recv(frame[:2]), {"type": "exec", "code": "1"})

    def test_frame_in_pieces(self):
        chan, _, wfd = self.pipe_channel()
        frame = r.Channel.encode({"type": "x", "data": "y" * 1000})
        # A writer thread: the reader takes what it can as it comes.
        import threading

        def write():
            for i in range(0, len(frame), 7):
                os.write(wfd, frame[i:i + 7])
        t = threading.Thread(target=write)
        t.start()
        self.assertEqual(chan.recv()["data"], "y" * 1000)
        t.join()

    def test_too_large(self):
        chan, _, wfd = self.pipe_channel()
        os.write(wfd, struct.pack(">I", r.MAX_FRAME + 1))
        with self.assertRaisesRegex(ValueError, "frame too large"):
            chan.recv()

    def test_closed(self):
        rfd, wfd = os.pipe()
        self.addCleanup(os.close, rfd)
        chan = r.Channel(rfd, -1)
        os.write(wfd, b"\x00\x00")
        os.close(wfd)
        with self.assertRaises(EOFError):
            chan.recv()

    def test_descriptors_come_with_their_frame(self):
        ours, host = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(ours.close)
        self.addCleanup(host.close)
        pr, pw = os.pipe()
        self.addCleanup(os.close, pr)
        self.addCleanup(os.close, pw)
        frame = r.Channel.encode({"type": "exec", "code": "1"})
        host.sendmsg([frame[:4]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("2i", pr, pw))])
        host.sendall(frame[4:])
        chan = r.Channel(ours.fileno(), ours.fileno(), ours)
        msg = chan.recv()
        fds = msg.pop("_fds")
        self.addCleanup(lambda: [os.close(fd) for fd in fds])
        self.assertEqual(msg, {"type": "exec", "code": "1"})
        self.assertEqual(len(fds), 2)
        os.write(fds[1], b"z")
        self.assertEqual(os.read(pr, 1), b"z", "the descriptor is the pipe's write end")


class ApplyLimitsTest(unittest.TestCase):
    """apply_limits lowers hard limits for good: it runs in a subprocess."""

    def limits_after(self, limits):
        code = textwrap.dedent("""
            import json, resource, sys
            sys.path.insert(0, %r)
            import codecell_runner as r
            r.apply_limits(json.loads(sys.argv[1]))
            names = ["RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_CORE"]
            print(json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in names}))
        """ % RUNNER_DIR)
        out = subprocess.run([sys.executable, "-B", "-c", code, json.dumps(limits)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return {k: tuple(v) for k, v in json.loads(out.stdout).items()}

    def test_limits(self):
        got = self.limits_after({"memory": 1 << 30, "file_size": 1 << 20, "open_files": 64, "cpu_seconds": 5})
        self.assertEqual(got["RLIMIT_AS"], (1 << 30, 1 << 30))
        self.assertEqual(got["RLIMIT_FSIZE"], (1 << 20, 1 << 20))
        self.assertEqual(got["RLIMIT_NOFILE"], (64, 64))
        self.assertEqual(got["RLIMIT_CPU"], (5, 6), "the hard limit is a second later")
        self.assertEqual(got["RLIMIT_CORE"], (0, 0))

    def test_session_file_size_soft(self):
        got = self.limits_after({"file_size": 1 << 20, "file_size_soft": 1000})
        self.assertEqual(got["RLIMIT_FSIZE"], (1000, 1 << 20))
        got = self.limits_after({"file_size": 1 << 20, "file_size_soft": 2 << 20})
        self.assertEqual(got["RLIMIT_FSIZE"], (1 << 20, 1 << 20), "the soft limit never passes the hard one")

    def test_unset_limits_stay(self):
        import resource
        before = resource.getrlimit(resource.RLIMIT_AS)
        got = self.limits_after({"cpu_seconds": 0})
        self.assertEqual(got["RLIMIT_AS"], before)
        self.assertEqual(got["RLIMIT_CPU"], resource.getrlimit(resource.RLIMIT_CPU))


if __name__ == "__main__":
    unittest.main()


class CodecellSurfaceTest(unittest.TestCase):
    """The codecell package shows, in help and __all__, only the tools the
    host says code can call in this execution."""

    def tearDown(self):
        import codecell
        codecell._only(None)

    def test_only_what_can_be_called(self):
        import pydoc
        import codecell
        import codecell.privacy
        codecell._only(["sanitize_pii", "write_workspace_file"])
        self.assertNotIn("restore_pii", codecell.__all__)
        self.assertIn("sanitize_pii", codecell.__all__)
        self.assertIn("search_tools", codecell.__all__, "search_tools is always there")
        self.assertEqual(codecell.privacy.__all__, ["sanitize_pii"])
        text = pydoc.render_doc(codecell, renderer=pydoc.plaintext)
        self.assertNotIn("restore_pii", text)
        self.assertNotIn("install_dependencies", text)
        self.assertIn("privacy     sanitize_pii\n", text)
        self.assertIn("sanitize_pii(text: str)", text)
        self.assertNotIn("restore_pii", pydoc.render_doc(codecell.privacy, renderer=pydoc.plaintext))
        # Still importable: its call says why it fails.
        from codecell import restore_pii  # noqa: F401
        codecell._only(None)
        self.assertIn("restore_pii", codecell.__all__)
        self.assertIn("privacy     sanitize_pii restore_pii\n", codecell.__doc__)
