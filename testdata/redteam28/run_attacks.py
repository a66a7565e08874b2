#!/usr/bin/python3
"""Run the attacks of attacks.py against a codecell binary over stdio and report leaks.

    /usr/bin/python3 run_attacks.py --bin BIN [--isolation development] [--only A13,A33] [--raw DIR]

Starts `codecell serve --toolsets all` with a throwaway config and data dir under /tmp, sends each
attack's setup / code / follow-up as execute_code calls (with a progress token where asked), keeps every
message received until the answer (notifications included), and searches them, plus the decoded bytes
of every base64 payload (image `data`, resource `blob`), for the attack's raw values. --raw DIR saves
each attack's messages. Only a client: it never reads codecell's code."""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attacks import A  # noqa: E402


class Client:
    def __init__(self, binary, isolation):
        self.dir = tempfile.mkdtemp(prefix="h28-attacks-")
        os.chmod(self.dir, 0o755)
        cfg = os.path.join(self.dir, "cfg.json")
        json.dump({"toolsets": ["all"], "sandbox": {"isolation": isolation, "python": "/usr/bin/python3"}}, open(cfg, "w"))
        self.p = subprocess.Popen([binary, "serve", "--config", cfg, "--data-dir", os.path.join(self.dir, "data")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "serve.err"), "w"),
                                  text=True, encoding="utf-8", errors="surrogateescape")
        self.n = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "h28-attacks", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def call(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        lines = []
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError("server closed")
            lines.append(line)
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("id") == self.n and ("result" in r or "error" in r):
                return r, lines

    def execute(self, code, args, progress):
        params = {"name": "execute_code", "arguments": dict(args, code=code)}
        if progress:
            params["_meta"] = {"progressToken": f"p{self.n + 1}"}
        return self.call("tools/call", params)

    def close(self):
        self.p.terminate()
        self.p.wait(10)
        # After the server's exit, which releases its workspaces' mounts.
        shutil.rmtree(self.dir, ignore_errors=True)


def decoded_payloads(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("data", "blob") and isinstance(v, str) and len(v) >= 8:
                try:
                    raw = base64.b64decode(v, validate=True)
                except ValueError:
                    raw = None
                if raw:
                    for enc in ("utf-8", "utf-16", "utf-32", "latin-1"):
                        try:
                            out.append(raw.decode(enc, errors="ignore"))
                        except LookupError:
                            pass
                    out.append(raw.replace(b"\x00", b"").decode("latin-1"))
            decoded_payloads(v, out)
    elif isinstance(obj, list):
        for v in obj:
            decoded_payloads(v, out)


def haystacks(lines):
    hs = []
    for line in lines:
        hs.append(line)
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        hs.append(json.dumps(obj, ensure_ascii=False))
        pay = []
        decoded_payloads(obj, pay)
        hs += pay
    return hs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--isolation", default="development")
    ap.add_argument("--only", default="")
    ap.add_argument("--raw", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    c = Client(a.bin, a.isolation)
    results = []
    try:
        for atk in A:
            if only and atk["id"] not in only:
                continue
            if atk["setup"]:
                c.execute(atk["setup"], {}, False)
            r, lines = c.execute(atk["code"], atk["args"], atk["progress"])
            if atk["followup"]:
                sc = (r.get("result") or {}).get("structuredContent") or {}
                of = sc.get("output_file")
                if of:
                    r2, l2 = c.execute(atk["followup"].replace("{output_file!r}", repr(of)), {}, False)
                    lines += l2
            hs = haystacks(lines)
            # the request is never echoed by the client's own log; only responses are searched
            leaked = [v for v in atk["leaks"] if any(v in h for h in hs)]
            nprog = sum(1 for l in lines if '"notifications/progress"' in l)
            sc = (r.get("result") or {}).get("structuredContent") or {}
            status = "LEAK" if leaked and not atk["documented"] else ("leak(documented)" if leaked else "ok")
            err = (sc.get("error") or {}).get("type", "") if isinstance(sc.get("error"), dict) else ""
            results.append((atk["id"], status, leaked, err, nprog, atk["path"]))
            print(f"{atk['id']}  {status:<17} {atk['path'][:60]:<60} err={err or '-'} progress={nprog} {'leaked: ' + ', '.join(map(repr, leaked)) if leaked else ''}", flush=True)
            if a.raw:
                os.makedirs(a.raw, exist_ok=True)
                open(os.path.join(a.raw, atk["id"] + ".jsonl"), "w", encoding="utf-8", errors="surrogateescape").write("".join(lines))
    finally:
        c.close()
    bad = [x for x in results if x[1] == "LEAK"]
    print(f"\n{len(results)} attacks, {len(bad)} leaks on claimed paths, {sum(1 for x in results if x[1] == 'leak(documented)')} on documented limits")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
