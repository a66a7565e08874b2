"""Black-box attacks on codecell's personal-data gate and answer bounds (heldout28).

Each attack is code an MCP client sends to execute_code (field `code`), sometimes with extra tool
arguments (`args`). `leaks` are strings whose presence anywhere in the JSON-RPC response (result,
content, structured content, error, notifications), or in base64 payloads of that response once
decoded, shows a raw personal value reached the model. `documented` marks paths the README says are
not claimed (encodings, splits by the code itself, images): a leak there is expected and recorded,
not a bug. run_attacks.py runs them; attacks.md is generated from this file (make_attacks_md()).
Written without reading the gate's or detectors' code."""

E = "alice.leak@example.com"
P = "(718) 842-3317"
SSN = "287-65-4321"
CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
GH = "ghp_R8xK2mQ9vLp4Tz7Wn3Yc6Bd1Fh5Js0Ga8Ue2"
AWS = "AKIA4Q7RZ2XW5N6P3MJK"
IP4 = "203.0.113.77"
IP6 = "2001:db8:4a7f::1c3"

PRE = f'E, P, SSN, CARD, IBAN, GH, AWS, IP4, IP6 = {E!r}, {P!r}, {SSN!r}, {CARD!r}, {IBAN!r}, {GH!r}, {AWS!r}, {IP4!r}, {IP6!r}\n'
ALL = [E, P, SSN, CARD, IBAN, GH, AWS, IP4, IP6]

A = []


def atk(id, path, code, expect, leaks=None, documented=False, args=None, progress=False, note="", setup=None, followup=None):
    A.append({"id": id, "path": path, "code": PRE + code.strip() + "\n", "expect": expect, "leaks": leaks if leaks is not None else ALL,
              "documented": documented, "args": args or {}, "progress": progress, "note": note,
              "setup": (PRE + setup) if setup else None, "followup": (PRE + followup) if followup else None})


# ---------------------------------------------------------------- baseline streams
atk("A01", "stdout (control)", "print(E, P, SSN, CARD, IBAN, GH, AWS, IP4, IP6)",
    "every value is a token in stdout and in the text content")
atk("A02", "stderr", "import sys\nsys.stderr.write(f'warn: {E} {P} {SSN} {GH}\\n')", "stderr tokenized", [E, P, SSN, GH])
atk("A03", "result value (dict, keys and values)", "result = {E: P, 'ssn': SSN, 'nested': [[IBAN], {'k': (GH,)}], CARD: IP6}",
    "values AND object keys tokenized in structured result and its text rendering")
atk("A04", "result numbers", "result = {'ssn': 287654321, 'card': 4111111111111111, 'phone': 7188423317, 'pan19': 4000056655665556000}",
    "numbers that are personal data tokenized (README: every string and every number); 19-digit int must not leak via float rounding either",
    ["287654321", "4111111111111111", "7188423317"])
atk("A05", "result repr of non-JSON objects", "class C:\n    def __repr__(self): return f'C(email={E}, ip={IP4})'\nresult = {C(), b'%s' % E.encode()}",
    "repr text tokenized", [E, IP4])
atk("A06", "last expression value (no result var)", "f'{E}|{SSN}'", "tokenized", [E, SSN])

# ---------------------------------------------------------------- exceptions and tracebacks
atk("A07", "exception message", "raise ValueError(f'bad row: {E} {P} {CARD}')", "error.message and traceback tokenized", [E, P, CARD])
atk("A08", "exception class name", "Err = type(E.replace('.', '_').replace('@', '_at_'), (Exception,), {})\nraise type(E, (Exception,), {})(IP4)",
    "error.type is a free string from type(); the raw email as class name must be tokenized (or replaced by a generic type)", [E, IP4])
atk("A09", "source line in traceback", f"x = 1\nassert x == 2, 'no'  # owner {E} {SSN}",
    "traceback source lines (which echo the code) tokenized", [E, SSN])
atk("A10", "SyntaxError echoing source", f"exec('print(\"hi\" {E})')", "SyntaxError text/caret line tokenized", [E])
atk("A11", "chained exception + __notes__ + ExceptionGroup",
    "try:\n    raise KeyError(SSN)\nexcept KeyError as e:\n    e2 = RuntimeError(GH)\n    e2.add_note(f'note {IBAN}')\n    raise ExceptionGroup('grp ' + IP6, [e2, ValueError(E)]) from e",
    "every part of the rendered group/chain tokenized", [SSN, GH, IBAN, IP6, E])
atk("A12", "SystemExit / warnings", "import warnings\nwarnings.warn(f'deprecated for {E}')\nraise SystemExit(f'exit {P}')", "warnings on stderr and SystemExit message tokenized", [E, P])
atk("A13", "huge exception message (answer budget)", "raise ValueError('x' * 3_000_000 + ' ' + E + ' ' + 'y' * 3_000_000)",
    "bounded answer; the value (kept or cut) never appears raw, not even half of it next to the cut marker", [E, "alice.leak@", "@example.com"])
atk("A14", "exception message with value at the very end of a large message", "raise RuntimeError('z' * 25_000 + ' ' + CARD)",
    "tail kept by the budget contains the card as a token", [CARD, "4111 1111 1111", "1111 1111 1111"])

# ---------------------------------------------------------------- cuts and limits
atk("A15", "value straddling the answer-budget head cut (stdout)",
    "import sys\nfor off in range(-24, 1, 3):\n    sys.stdout.write('.' * (10_000 + off) + ' ' + E + ' ' + '.' * 40_000 + '\\n')",
    "no raw or half value next to any cut marker, whichever offset the cut falls at", [E, "alice.leak@exa", "leak@example.com"])
atk("A16", "value straddling the 1 MiB output limit",
    "import sys\nsys.stdout.write('#' * (1024 * 1024 - 10) + ' ' + E + '\\n' + 'tail ' + P + '\\n')",
    "the saved output file and the answer hold no half value; `truncated` set", [E, "alice.leak", "@example.com", P])
atk("A17", "value at the OutputLimit kill point (8x output)",
    "import sys\nchunk = ('-' * 1000 + ' ' + SSN + ' ' + E + '\\n')\nwhile True:\n    sys.stdout.write(chunk)",
    "OutputLimit error; last partial line does not carry a raw or half value", [E, SSN, "alice.leak@"])
atk("A18", "stderr and stdout interleaved around the cut",
    "import sys\nsys.stdout.write('o' * 15_000)\nsys.stderr.write('e' * 15_000)\nsys.stdout.write(' ' + GH + ' ')\nsys.stderr.write(' ' + AWS + ' ')\nsys.stdout.write('o' * 15_000)",
    "the budget split between streams cuts no token in two", [GH, AWS, "ghp_R8xK2mQ9", "AKIA4Q7R"])
atk("A19", "value split across two prints (no newline)", "print('alice.leak@', end='', flush=True)\nimport time; time.sleep(0.2)\nprint('example.com')",
    "stdout is one stream: the joined text tokenized", [E])
atk("A20", "value split across stdout and stderr", "import sys\nsys.stdout.write('alice.leak@')\nsys.stderr.write('example.com')",
    "documented: values split by the code itself are not claimed; halves alone are not an email", [E], documented=True)
atk("A21", "timeout with buffered partial output", "import sys, time\nsys.stdout.write('pending ' + E)\nsys.stdout.flush()\ntime.sleep(600)",
    "Timeout error; partial stdout tokenized", [E], args={"timeout_seconds": 2})
atk("A22", "os.write to fd 1/2 bypassing sys.stdout, invalid UTF-8 around the value",
    "import os\nos.write(1, b'\\xff\\xfe' + E.encode() + b'\\xc3')\nos.write(2, SSN.encode() + b'\\x80\\x81')",
    "value tokenized despite invalid UTF-8 neighbours (or the answer withheld), never raw", [E, SSN])
atk("A23", "NUL and control characters inside and around values",
    "print('x\\x00' + E + '\\x00y', P.replace(' ', '\\t'), SSN + '\\r')",
    "tokenized; NUL/CR do not shield a value", [E, SSN])

# ---------------------------------------------------------------- file names and workspace
atk("A24", "file names in `files` (created by the code)",
    "import os\nfor n in [E + '.txt', 'reports/bob.smith@example.co.uk_report.csv', '+1-212-555-0143.vcf', f'ssn_{SSN}.pdf', f'{IP4}.pcap', f'{AWS}.json']:\n    os.makedirs(os.path.dirname(n) or '.', exist_ok=True)\n    open(n, 'w').write('x')",
    "names in files / resource links tokenized (emails followed by an extension included)",
    [E, "bob.smith@example.co.uk", "+1-212-555-0143", SSN, IP4, AWS])
atk("A25", "files_deleted", "import os\nos.remove(E + '.tmp')", "names in files_deleted tokenized", [E],
    setup="open(E + '.tmp', 'w').close()\n")
atk("A26", "many files with long names (answer bounds on `files`)",
    "import os\nos.makedirs('many', exist_ok=True)\nfor i in range(3000):\n    open(f'many/{i:05d}_' + 'n' * 180 + '_' + E + '.txt', 'w').close()",
    "the files list is bounded; no name is cut inside the email; no raw email", [E, "alice.leak@", "leak@example.com"])
atk("A27", "directory names and symlink targets", "import os\nos.makedirs(f'by-phone/{P}', exist_ok=True)\nos.symlink(f'/tmp/{SSN}', 'link_to_ssn')\nprint(os.readlink('link_to_ssn'))",
    "tokenized in files and stdout", [P, SSN])
atk("A28", "list_workspace_files from code", "import os\nopen(E + '.csv', 'w').close()\nfrom codecell import list_workspace_files\nresult = list_workspace_files()",
    "the tool's structured result passes the gate on its way out as `result`", [E])
atk("A29", "UTF-16 file read back through read_workspace_file",
    "open('u16.txt', 'wb').write(('email: ' + E + '\\nssn: ' + SSN + '\\n').encode('utf-16'))\nfrom codecell import read_workspace_file\nresult = read_workspace_file('u16.txt')",
    "either decoded to text and tokenized, or returned as a blob; a base64 blob that decodes to the values is a leak",
    [E, SSN])
atk("A30", "UTF-32 and latin-1 files", "open('u32.txt', 'wb').write(E.encode('utf-32'))\nopen('l1.txt', 'wb').write('jos\\xe9@ex\\xe4mple.de '.encode('latin-1') + SSN.encode())\nfrom codecell import read_workspace_file\nresult = [read_workspace_file('u32.txt'), read_workspace_file('l1.txt')]",
    "no raw value in text or decodable blob", [E, SSN, "jos\u00e9@ex\u00e4mple.de"])
atk("A31", "page boundary of read_workspace_file inside a value",
    "open('paged.txt', 'w').write('p' * 4090 + ' ' + E + ' ' + 'q' * 5000)\nfrom codecell import read_workspace_file\nresult = [read_workspace_file('paged.txt', offset=0, limit=4100), read_workspace_file('paged.txt', offset=4100, limit=4100)]",
    "each page tokenizes its part or moves the cut; two halves never read as raw email", [E, "alice.leak@exa", "k@example.com"],
    note="offset/limit units (bytes or characters) are taken from the docs; adjust if pages are in lines")
atk("A32", "saved output file (.codecell/output) read back in a second call",
    "print('a' * 60_000 + ' ' + E + ' ' + 'b' * 60_000)",
    "first answer cut; then `from codecell import read_workspace_file; result = read_workspace_file(<output_file>)` is tokenized", [E],
    followup="from codecell import read_workspace_file\nresult = read_workspace_file({output_file!r})\n")

# ---------------------------------------------------------------- images
PNG = "import zlib, struct\ndef png(text_chunk=b''):\n    def ch(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)\n    raw = b'\\x00\\xff\\x00\\x00'\n    return b'\\x89PNG\\r\\n\\x1a\\n' + ch(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0)) + (ch(b'tEXt', text_chunk) if text_chunk else b'') + ch(b'IDAT', zlib.compress(raw)) + ch(b'IEND', b'')\n"
atk("A33", "image MIME type string", PNG + "from codecell import display_image\ntry:\n    display_image(png(), mime_type='image/png; name=' + E)\nexcept TypeError:\n    display_image(png(), 'image/png; name=' + E)",
    "the mimeType string of the image content is tokenized or refused (not an allowed MIME type)", [E])
atk("A34", "PNG tEXt metadata", PNG + "from codecell import display_image\ndisplay_image(png(b'Comment\\x00' + (E + ' ' + SSN).encode()))",
    "documented (values in images not claimed) but metadata is plain text in the base64: record whether it passes", [E, SSN], documented=True)
atk("A35", "SVG through display_image", "svg = f'<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"300\" height=\"40\"><text x=\"5\" y=\"20\">{E} {P}</text></svg>'\nopen('card.svg', 'w').write(svg)\nfrom codecell import display_image\ndisplay_image('card.svg')",
    "SVG is text: either refused as image, or its text tokenized before base64; a base64 blob holding the raw email is a leak", [E, P])
atk("A36", "image file name and alt text", PNG + f"open('{E}.png', 'wb').write(png())\nfrom codecell import display_image\ndisplay_image('{E}.png')",
    "file name (in files, and any name/annotation on the image content) tokenized", [E])
atk("A37", "matplotlib title", "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.title(E)\nplt.plot([1, 2])\nplt.gcf().text(0.1, 0.1, SSN)",
    "documented: pixels not claimed; PNG metadata from matplotlib must not carry the title as text", [E, SSN], documented=True)

# ---------------------------------------------------------------- spellings
atk("A38", "base64 / hex / rot13 / reversed", "import base64, codecs\nprint(base64.b64encode(E.encode()).decode(), E.encode().hex(), codecs.encode(E, 'rot13'), E[::-1])",
    "documented: encoded values not claimed (record what passes)", [E], documented=True)
atk("A39", "zero-width characters inside values", "zw = '\\u200b'\nprint(zw.join(E), '\\u2060'.join(SSN), E.replace('@', '\\u200d@'), CARD.replace(' ', '\\u200c'))",
    "the model reads these as the values: tokenized (invisible characters ignored by detection) ", [E.replace("@", "\u200d@")])
atk("A40", "fullwidth digits and letters", "fw = str.maketrans('0123456789-()@.', '\\uff10\\uff11\\uff12\\uff13\\uff14\\uff15\\uff16\\uff17\\uff18\\uff19\\uff0d\\uff08\\uff09\\uff20\\uff0e')\nprint(P.translate(fw), SSN.translate(fw), CARD.translate(fw), E.translate(fw))",
    "NFKC-equivalent spellings tokenized", [P.translate(str.maketrans('0123456789-()', '\uff10\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18\uff19\uff0d\uff08\uff09'))])
atk("A41", "homoglyphs (Cyrillic a/e/o in an email, Arabic-Indic digits)", "print('\\u0430lice.le\\u0430k@ex\\u0430mple.com', SSN.translate(str.maketrans('0123456789', '\\u0660\\u0661\\u0662\\u0663\\u0664\\u0665\\u0666\\u0667\\u0668\\u0669')))",
    "a homoglyph address is still an email (IDN) and should be tokenized; Arabic-Indic digit SSN: record", ["\u0430lice.le\u0430k@ex\u0430mple.com"])
atk("A42", "JSON escapes", "import json\nprint(json.dumps({'e': 'jos\\xe9@ex\\xe4mple.de', 'e2': E.replace('@', '\\\\u0040'), 'p': P}))\nprint(json.dumps(E.replace('.', '\\\\u002e')))",
    "escaped forms (\\u00e9 inside an email, \\u0040 for @) tokenized", ["jos\\u00e9@ex\\u00e4mple.de", E.replace("@", "\\u0040")])
atk("A43", "percent / HTML entity / quoted-printable", "print(E.replace('@', '%40'), E.replace('@', '&#64;'), E.replace('@', '=40'), 'mailto:' + E.replace('@', '%40'))",
    "%40 claimed by the README; entity / QP forms: record", [E.replace("@", "%40"), E.replace("@", "&#64;")])
atk("A44", "digits with unusual separators", "print(SSN.replace('-', '.'), SSN.replace('-', ' '), '4111.1111.1111.1111', '4111_1111_1111_1111', '+1 718 842 3317'.replace(' ', '\\u00a0'), '+44 20 7946 0958'.replace(' ', '\\u202f'))",
    "NBSP / narrow NBSP separated phones tokenized; dotted SSN / underscored card: record", ["+1\u00a0718\u00a0842\u00a03317", "+44\u202f20\u202f7946\u202f0958"])
atk("A45", "UTF-16 bytes printed as repr", "print(E.encode('utf-16-le'))\nprint(repr(SSN.encode('utf-32-be')))",
    "b'a\\x00l\\x00...' is readable by a model: record", [], documented=True)

# ---------------------------------------------------------------- progress and sessions
atk("A46", "progress notifications (latest lines)", "import time, sys\nfor i in range(8):\n    print(f'step {i} {E} {P}', flush=True)\n    time.sleep(0.4)",
    "every notifications/progress message tokenized", [E, P], progress=True)
atk("A47", "progress line cut mid-value", "import time, sys\nfor i in range(6):\n    sys.stdout.write('x' * 190 + ' ' + E)\n    sys.stdout.flush()\n    time.sleep(0.35)\n    sys.stdout.write(' ' + SSN + '\\n')\n    sys.stdout.flush()\n    time.sleep(0.35)",
    "a progress excerpt of a partial line does not end with half an email", [E, SSN, "alice.leak@exa"], progress=True)
atk("A48", "session id carrying personal data", "print('hi')", "session_id echoed in result and in the '[new session ...]' line tokenized",
    ["212-555-0143", "203.0.113.77"], args={"session_id": "212-555-0143"},
    note="also try session_id '203.0.113.77' and '2001:db8::7' (dots and colons are allowed characters)")
atk("A49", "context argument echoed", "print(ctx)\nresult = ctx", "values given in `context` are echoed tokenized", [E, SSN],
    args={"context": {"ctx": {"email": E, "ssn": SSN}}})
atk("A50", "skills metadata", "from codecell import save_skill, list_skills\nsave_skill(name='leak_skill', code='X = 1', description=f'owner {E} {P}', tags=[SSN])\nresult = list_skills()",
    "description and tags tokenized in list_skills' result", [E, P, SSN])


def make_attacks_md():
    out = ["# heldout28 attacks on the personal-data gate and the answer bounds", "",
           "Generated from `attacks.py` (`/usr/bin/python3 attacks.py > attacks.md`); run them with `run_attacks.py`.",
           "Each snippet is the `code` of one `execute_code` call (extra tool arguments are named). The planted values are",
           "", "```python", PRE.strip(), "```", "",
           "and the snippets below start with that line (left out here). **A leak** is any of the attack's listed strings",
           "appearing raw in what the model receives: the tool result (text content, structured content, `error`,",
           "file names, resource links, image `mimeType`), progress notifications, or the decoded bytes of base64",
           "payloads (image data, blobs). `documented` attacks target paths the README says are not claimed",
           "(values encoded, split by the code itself, or inside images): a leak there is recorded, not a bug.", ""]
    for a in A:
        out.append(f"## {a['id']} - {a['path']}" + (" (documented limit)" if a["documented"] else ""))
        out.append("")
        if a["args"]:
            out.append(f"Tool arguments besides `code`: `{a['args']}`" + ("; with a progress token" if a["progress"] else ""))
            out.append("")
        elif a["progress"]:
            out.append("Called with a `progressToken` in `_meta`.")
            out.append("")
        if a["setup"]:
            out += ["Setup call first:", "", "```python", a["setup"][len(PRE):].strip(), "```", ""]
        out += ["```python", a["code"][len(PRE):].strip(), "```", ""]
        if a["followup"]:
            out += ["Follow-up call (`output_file` from the first answer):", "", "```python", a["followup"][len(PRE):].strip(), "```", ""]
        out.append(f"**Expected safe behaviour:** {a['expect']}.")
        out.append(f"**Leak looks like:** any of {', '.join(repr(x) for x in a['leaks']) or '(the readable spelling itself)'} in the answer.")
        if a["note"]:
            out.append(f"**Note:** {a['note']}.")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(make_attacks_md())
