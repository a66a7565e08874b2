#!/usr/bin/env python3
"""Generate corpus.jsonl: labelled samples of personal data in the formats
codecell's output carries (log lines, CSV, JSON, .env and YAML, URLs, stack
traces, chat), with hard negatives.

    python3 gencorpus.py > corpus.jsonl

Each line is {"text", "format", "entities": [{"kind", "value"}]}. The labels
come from construction: a template puts a generated value in a text and
records it, so they do not depend on the detectors. Values are realistic
for their kind: phone numbers are in ranges libphonenumber accepts (the
corpus test checks each), cards pass Luhn with a real issuer prefix, IBANs
their mod-97 check with the country's length and structure, SSNs lie in
issued ranges.

Labelling rules: a value is labelled as it is written (separators and a
%2B or "+" included; a URL's port or an address's /prefix excluded). A
secret is the secret only (not its key name); a URL's password is the
password; a private key is the whole block. Tokens such as [EMAIL_3f2a9c]
are not values. Deterministic: the same seed gives the same file.
"""

import base64
import json
import random
import string
import sys

R = random.Random(20260601)

FIRST = ["jane", "john", "maria", "ahmed", "yuki", "olga", "pierre", "li", "fatima", "carlos", "chloe", "noah",
         "ivan", "amara", "sven", "priya", "diego", "mei", "tom", "anna", "lucas", "sofia", "omar", "elena",
         "kwame", "ines", "hana", "raj", "lea", "mateo", "zoe", "felix", "nadia", "oscar", "ruth", "samir"]
LAST = ["doe", "smith", "garcia", "khan", "tanaka", "petrova", "dubois", "wang", "haddad", "lopez", "rossi",
        "nguyen", "kowalski", "okafor", "larsen", "patel", "silva", "chen", "brown", "muller", "novak", "ali",
        "ivanova", "mensah", "costa", "sato", "singh", "weber", "fischer", "moreau", "obrien", "schmidt"]
DOMAINS = ["gmail.com", "outlook.com", "yahoo.co.uk", "proton.me", "fastmail.fm", "example.com", "example.org",
           "acme-corp.io", "mail.example.net", "university.edu", "startup.ai", "firma.de", "societe.fr",
           "hospital.org.au", "corp.example.co.jp", "bank.com.br", "icloud.com", "hey.com", "zoho.eu",
           "dept.agency.gov", "shop.co.uk", "team.dev", "web.de", "posteo.net", "sub.mail.company.com"]


def pick(xs):
    return R.choice(xs)


def name():
    return pick(FIRST).capitalize() + " " + pick(LAST).capitalize()


# ---------------------------------------------------------------- values

def email():
    f, l = pick(FIRST), pick(LAST)
    style = R.randrange(12)
    if style == 0:
        local = f + "." + l
    elif style == 1:
        local = f[0] + l
    elif style == 2:
        local = f + "_" + l + str(R.randrange(10, 99))
    elif style == 3:
        local = f + "+" + pick(["news", "billing", "work", "test", "spam"])
    elif style == 4:
        local = (f + "." + l).title().replace(" ", "")
    elif style == 5:
        local = f + "-" + l
    elif style == 6:
        local = l + str(R.randrange(1950, 2005))
    elif style == 7:
        local = pick(["o'brien", "d'angelo", "o'neill", "l'oreal.fan"])
    elif style == 8:
        local = pick(["info", "support", "billing", "hr", "sales", "noreply", "admin", "careers"])
    elif style == 9:
        local = f.upper() + "." + l.upper()
    elif style == 10:
        local = f + str(R.randrange(1, 999))
    else:
        local = f + "." + l[0]
    return local + "@" + pick(DOMAINS)


def idn_email():
    return pick(["josé.garcía@correo.es", "müller@firma.de", "françois@société.fr", "søren@eksempel.dk",
                 "zoë.brown@example.com", "иван@почта.рф", "用户@例子.中国", "chloé@exemple.fr"])


def digits(n):
    return "".join(R.choice(string.digits) for _ in range(n))


US_AREAS = [201, 202, 203, 205, 206, 207, 210, 212, 213, 214, 215, 216, 217, 224, 225, 240, 248, 253, 267,
            281, 301, 302, 303, 305, 310, 312, 313, 314, 315, 317, 319, 321, 323, 330, 347, 352, 360, 401,
            402, 404, 405, 406, 407, 408, 410, 412, 414, 415, 425, 440, 443, 469, 470, 480, 502, 503, 504,
            505, 508, 510, 512, 513, 515, 516, 518, 520, 530, 540, 541, 559, 561, 562, 571, 585, 586, 602,
            603, 608, 609, 610, 612, 614, 615, 617, 619, 626, 630, 631, 646, 650, 651, 657, 678, 682, 702,
            703, 704, 706, 713, 714, 716, 718, 720, 727, 732, 734, 757, 760, 763, 770, 773, 774, 781, 786,
            801, 802, 803, 804, 808, 813, 815, 816, 817, 818, 832, 845, 847, 850, 857, 858, 860, 862, 864,
            901, 904, 908, 909, 913, 914, 916, 917, 919, 925, 929, 937, 949, 952, 954, 971, 972, 973, 978]
CA_AREAS = [416, 647, 604, 778, 514, 438, 403, 587, 613, 902]


def nanp_parts(areas=US_AREAS):
    a = pick(areas)
    ex = str(R.randrange(2, 10)) + digits(2)
    while ex[1:] == "11" or ex == "555":
        ex = str(R.randrange(2, 10)) + digits(2)
    return str(a), ex, digits(4)


def phone():
    """A phone number as written, and the style's name."""
    k = R.randrange(26)
    a, e, s = nanp_parts()
    if k == 0:
        return "+1" + a + e + s
    if k == 1:
        return "+1 %s %s %s" % (a, e, s)
    if k == 2:
        return "+1-%s-%s-%s" % (a, e, s)
    if k == 3:
        return "(%s) %s-%s" % (a, e, s)
    if k == 4:
        return "%s-%s-%s" % (a, e, s)
    if k == 5:
        return "%s.%s.%s" % (a, e, s)
    if k == 6:
        return "1-%s-%s-%s" % (a, e, s)
    if k == 7:
        return "+1 (%s) %s-%s" % (a, e, s)
    if k == 8:
        return "+44 20 7946 0%s" % digits(3)
    if k == 9:
        return "020 7946 0%s" % digits(3)
    if k == 10:
        return "+44 %s %s" % (pick(["7400", "7500", "7800", "7900", "7412"]), digits(6))
    if k == 11:
        return "0%s %s" % (pick(["7400", "7500", "7800", "7900", "7412"]), digits(6))
    if k == 12:
        return "+49 30 %s" % (str(R.randrange(2, 9)) + digits(7))
    if k == 13:
        return pick(["+49 151 %s" % digits(8), "+49 152 %s" % digits(8), "+49 %s %s" % (pick(["160", "170", "171", "176"]), digits(7))])
    if k == 14:
        return "+33 1 %s %s %s %s" % (digits(2), digits(2), digits(2), digits(2))
    if k == 15:
        return "06 %s %s %s %s" % (str(R.randrange(10, 80)), digits(2), digits(2), digits(2))
    if k == 16:
        return "+61 2 9%s %s" % (digits(3), digits(4))
    if k == 17:
        return "+61 412 %s %s" % (digits(3), digits(3))
    if k == 18:
        return "+91 98%s %s" % (digits(3), digits(5))
    if k == 19:
        return "+81 3-%s-%s" % (str(R.randrange(1, 10)) + digits(3), digits(4))
    if k == 20:
        return "+55 11 9%s-%s" % (digits(4), digits(4))
    if k == 21:
        return "+34 6%s %s %s" % (digits(2), digits(3), digits(3))
    if k == 22:
        return "+39 06 %s %s" % (digits(4), digits(4))
    if k == 23:
        a, e, s = nanp_parts(CA_AREAS)
        return "+1 %s-%s-%s" % (a, e, s)
    if k == 24:
        return "+31 20 %s %s" % (str(R.randrange(2, 9)) + digits(2), digits(4))
    return "+52 55 %s %s" % (digits(4), digits(4))


def phone_compact_intl():
    a, e, s = nanp_parts()
    return pick(["+1" + a + e + s, "+4420794600%s" % digits(2), "+49151%s" % digits(8),
                 "+3361%s" % digits(7), "+61412%s" % digits(6)])


def ssn():
    while True:
        area = R.randrange(1, 900)
        if area != 666:
            break
    return "%03d-%02d-%04d" % (area, R.randrange(1, 100), R.randrange(1, 10000))


def luhn_complete(prefix, length):
    d = [int(c) for c in prefix]
    while len(d) < length - 1:
        d.append(R.randrange(10))
    s = 0
    for i, x in enumerate(reversed(d)):
        if i % 2 == 0:
            x *= 2
            if x > 9:
                x -= 9
        s += x
    d.append((10 - s % 10) % 10)
    return "".join(map(str, d))


def card_digits():
    k = R.randrange(9)
    if k == 0:
        return luhn_complete("4" + digits(5), 16)
    if k == 1:
        return luhn_complete(str(R.randrange(51, 56)), 16)
    if k == 2:
        return luhn_complete(str(R.randrange(2221, 2721)), 16)
    if k == 3:
        return luhn_complete(pick(["34", "37"]), 15)
    if k == 4:
        return luhn_complete("6011", 16)
    if k == 5:
        return luhn_complete(str(R.randrange(3528, 3590)), 16)
    if k == 6:
        return luhn_complete(pick(["36", "38"]), 14)
    if k == 7:
        return pick(["4111111111111111", "4242424242424242", "5555555555554444", "378282246310005",
                     "6011111111111117", "4012888888881881", "5105105105105100", "3566002020360505"])
    return luhn_complete("62" + digits(4), 16)


def card_written(d=None):
    d = d or card_digits()
    k = R.randrange(4)
    if len(d) == 15 and k in (1, 2):
        sep = " " if k == 1 else "-"
        return d[:4] + sep + d[4:10] + sep + d[10:]
    if len(d) == 14 and k in (1, 2):
        sep = " " if k == 1 else "-"
        return d[:4] + sep + d[4:10] + sep + d[10:]
    if k == 1:
        return " ".join(d[i:i + 4] for i in range(0, len(d), 4))
    if k == 2:
        return "-".join(d[i:i + 4] for i in range(0, len(d), 4))
    return d


IBAN = {
    "DE": "8!n10!n", "GB": "4!a6!n8!n", "FR": "5!n5!n11!c2!n", "ES": "4!n4!n1!n1!n10!n", "IT": "1!a5!n5!n12!c",
    "NL": "4!a10!n", "BE": "3!n7!n2!n", "CH": "5!n12!c", "AT": "5!n11!n", "PL": "8!n16!n", "PT": "4!n4!n11!n2!n",
    "IE": "4!a6!n8!n", "SE": "3!n16!n1!n", "NO": "4!n6!n1!n", "DK": "4!n9!n1!n", "FI": "3!n11!n",
    "LU": "3!n13!c", "GR": "3!n4!n16!c", "CZ": "4!n16!n", "RO": "4!a16!c", "HU": "3!n4!n1!n15!n1!n",
    "SA": "2!n18!c", "AE": "3!n16!n", "TR": "5!n1!n16!c", "BR": "8!n5!n10!n1!a1!c", "MT": "4!a5!n18!c",
    "LC": "4!a24!c", "SC": "4!a2!n2!n16!n3!a", "UA": "6!n19!c", "EG": "4!n4!n17!n", "RU": "9!n5!n15!c",
    "YE": "4!a4!n18!c", "SO": "4!n3!n12!n", "NI": "4!a20!n", "OM": "3!n16!c", "LY": "3!n3!n15!n",
    "IQ": "4!a3!n12!n", "SV": "4!a20!n", "VA": "3!n15!n", "BY": "4!c4!n16!c", "DJ": "5!n5!n11!n2!n",
    "FK": "2!a12!n", "MN": "4!n12!n", "SD": "2!n12!n", "BI": "5!n5!n11!n2!n", "HN": "4!a20!n",
}


def bban(spec):
    import re
    out = ""
    for n, cls in re.findall(r"(\d+)!?([nac])", spec):
        for _ in range(int(n)):
            if cls == "n":
                out += R.choice(string.digits)
            elif cls == "a":
                out += R.choice(string.ascii_uppercase)
            else:
                out += R.choice(string.ascii_uppercase + string.digits)
    return out


def iban_check(cc, b):
    s = b + cc + "00"
    n = int("".join(str(int(c, 36)) for c in s))
    return "%02d" % (98 - n % 97)


def iban(cc=None):
    cc = cc or pick(list(IBAN))
    b = bban(IBAN[cc])
    v = cc + iban_check(cc, b) + b
    if R.randrange(2):
        return " ".join(v[i:i + 4] for i in range(0, len(v), 4))
    return v


def ipv4():
    k = R.randrange(5)
    if k == 0:
        return "10.%d.%d.%d" % (R.randrange(256), R.randrange(256), R.randrange(1, 255))
    if k == 1:
        return "192.168.%d.%d" % (R.randrange(256), R.randrange(1, 255))
    if k == 2:
        return "172.%d.%d.%d" % (R.randrange(16, 32), R.randrange(256), R.randrange(1, 255))
    if k == 3:
        return pick(["203.0.113", "198.51.100", "192.0.2"]) + ".%d" % R.randrange(1, 255)
    return "%d.%d.%d.%d" % (R.choice([8, 23, 34, 45, 52, 66, 81, 91, 104, 142, 151, 185, 212]),
                            R.randrange(256), R.randrange(256), R.randrange(1, 255))


def hx(n):
    return "%x" % R.randrange(16 ** (n - 1), 16 ** n)


def ipv6():
    k = R.randrange(6)
    if k == 0:
        return "2001:db8::%s:%s" % (hx(4), hx(4))
    if k == 1:
        return "2001:0db8:85a3:0000:0000:8a2e:0370:%s" % hx(4)
    if k == 2:
        return "fe80::%s:%s:%s:%s" % (hx(4), hx(4), hx(4), hx(4))
    if k == 3:
        return "2606:4700:%s::%s" % (hx(4), hx(4))
    if k == 4:
        return "::ffff:%s" % ipv4()
    return "2a01:%s:%s:%s:%s:%s:%s:%s" % tuple(hx(4) for _ in range(7))


ALNUM = string.ascii_letters + string.digits


def rnd(n, alphabet=ALNUM):
    return "".join(R.choice(alphabet) for _ in range(n))


def b64(n):
    return rnd(n, string.ascii_letters + string.digits + "+/")


def jwt():
    header = base64.urlsafe_b64encode(json.dumps({"alg": pick(["HS256", "RS256", "ES256"]), "typ": "JWT"}).encode()).decode().rstrip("=")
    payload = base64.urlsafe_b64encode(json.dumps({"sub": digits(6), "name": name(), "iat": 1700000000 + R.randrange(10 ** 7)}).encode()).decode().rstrip("=")
    return header + "." + payload + "." + rnd(43, ALNUM + "-_")


def pem():
    kind = pick(["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY"])
    lines = [b64(64) for _ in range(R.randrange(3, 9))] + [b64(R.randrange(10, 60)) + "=="]
    return "-----BEGIN %s-----\n%s\n-----END %s-----" % (kind, "\n".join(lines), kind)


def secret_token():
    """A provider token that stands on its own (no key name needed)."""
    k = R.randrange(13)
    if k == 0:
        return "AKIA" + rnd(16, string.ascii_uppercase + "234567")
    if k == 1:
        return "ghp_" + rnd(36)
    if k == 2:
        return "github_pat_11" + rnd(20, string.ascii_uppercase + string.digits) + "_" + rnd(59)
    if k == 3:
        return "xoxb-" + digits(12) + "-" + digits(13) + "-" + rnd(24)
    if k == 4:
        return "sk_live_" + rnd(24)
    if k == 5:
        return "AIza" + rnd(35, ALNUM + "-_")
    if k == 6:
        return "glpat-" + rnd(20, ALNUM + "-_")
    if k == 7:
        return "npm_" + rnd(36)
    if k == 8:
        return "SG." + rnd(22, ALNUM + "-_") + "." + rnd(43, ALNUM + "-_")
    if k == 9:
        return jwt()
    if k == 10:
        n = pick([58, 74])
        return "sk-proj-" + rnd(n, ALNUM + "-_") + "T3BlbkFJ" + rnd(n, ALNUM + "-_")
    if k == 11:
        return "xoxp-" + digits(11) + "-" + digits(12) + "-" + digits(13) + "-" + hx(32)
    return "ghs_" + rnd(36)


def secret_value():
    """A random value that is secret because of the key it is assigned to."""
    k = R.randrange(5)
    if k == 0:
        return rnd(R.randrange(24, 48))
    if k == 1:
        return "".join(R.choice("0123456789abcdef") for _ in range(64))
    if k == 2:
        return b64(40)
    if k == 3:
        return rnd(8) + "-" + rnd(12) + "-" + rnd(10)
    return "".join(R.choice("0123456789abcdef") for _ in range(128))


def weak_password():
    return pick(["hunter2", "Summer2024!", "P@ssw0rd", "letmein123", "Tr0ub4dor&3", "qwerty!9", "Welcome1",
                 "s3cr3t", "admin123", "correct-horse-9", "Pa55word", "dragon77", "MyDog$Max", "Passw0rd!"])


# ---------------------------------------------------------------- samples

OUT = []


def emit(fmt, parts):
    """parts: list of str or (kind, value); a tuple is a labelled value."""
    text = ""
    ents = []
    for p in parts:
        if isinstance(p, tuple):
            text += p[1]
            ents.append({"kind": p[0], "value": p[1]})
        else:
            text += p
    OUT.append({"text": text, "format": fmt, "entities": ents})


def E(v=None):
    return ("EMAIL", v or email())


def P(v=None):
    return ("PHONE", v or phone())


def S(v=None):
    return ("SSN", v or ssn())


def C(v=None):
    return ("CARD", v or card_written())


def I(v=None):
    return ("IBAN", v or iban())


def V4(v=None):
    return ("IPV4", v or ipv4())


def V6(v=None):
    return ("IPV6", v or ipv6())


def K(v=None):
    return ("SECRET", v or secret_token())


def ts():
    return "2024-%02d-%02dT%02d:%02d:%02d.%03dZ" % (R.randrange(1, 13), R.randrange(1, 29), R.randrange(24),
                                                    R.randrange(60), R.randrange(60), R.randrange(1000))


def logts():
    return "2024-%02d-%02d %02d:%02d:%02d" % (R.randrange(1, 13), R.randrange(1, 29), R.randrange(24), R.randrange(60), R.randrange(60))


LEVEL = ["INFO", "WARN", "ERROR", "DEBUG"]


def gen_logs(n):
    for _ in range(n):
        k = R.randrange(22)
        t = logts()
        lv = pick(LEVEL)
        if k == 0:
            emit("log", [t, " ", lv, " auth: login ok user=", E(), " ip=", V4(), " ua=\"Mozilla/5.0 (X11; Linux x86_64) Firefox/124.0\""])
        elif k == 1:
            ip = ipv4()
            emit("log", [V4(ip), ' - - [10/Oct/2024:13:55:36 +0000] "GET /api/v1/users?email=', E(), ' HTTP/1.1" 200 2326 "-" "curl/8.4.0"'])
        elif k == 2:
            emit("log", [t, " ", lv, " payment declined card=", C(), " amount=", "%d.%02d" % (R.randrange(5, 900), R.randrange(100)), " currency=EUR"])
        elif k == 3:
            emit("log", ["%s sshd[%d]: Accepted publickey for deploy from " % (t, R.randrange(1000, 60000)), V4(), " port %d ssh2" % R.randrange(1024, 65535)])
        elif k == 4:
            emit("log", ["%s sshd[%d]: Failed password for invalid user admin from " % (t, R.randrange(1000, 60000)), V6(), " port %d ssh2" % R.randrange(1024, 65535)])
        elif k == 5:
            emit("log", [t, " ", lv, " sms sent to=", P(), " template=otp status=delivered"])
        elif k == 6:
            emit("log", ['{"ts":"%s","level":"%s","msg":"user updated","email":"' % (ts(), lv.lower()), E(), '","phone":"', P(), '"}'])
        elif k == 7:
            emit("log", [t, " ", lv, " kyc check ssn=", S(), " result=pass"])
        elif k == 8:
            emit("log", [t, " ", lv, " payout to ", I(), " scheduled (ref %s)" % rnd(8, string.ascii_uppercase + string.digits)])
        elif k == 9:
            emit("log", [t, " ", lv, " upstream connect failed: dial tcp [", V6(), "]:443: i/o timeout"])
        elif k == 10:
            emit("log", [t, " ", lv, " config loaded AWS_ACCESS_KEY_ID=", K("AKIA" + rnd(16, string.ascii_uppercase + "234567")), " region=eu-west-1"])
        elif k == 11:
            emit("log", [t, " ", lv, " retrying with token ", K(), " (attempt 2/5)"])
        elif k == 12:
            emit("log", ["<134>1 %s web01 nginx - - - client " % ts(), V4(), " closed keepalive connection"])
        elif k == 13:
            emit("log", [t, " ", lv, " mail: bounce for <", E(), "> 550 5.1.1 user unknown"])
        elif k == 14:
            emit("log", ["time=\"%s\" level=%s msg=\"request\" remote_addr=" % (ts(), lv.lower()), V4(), ":%d method=POST path=/login" % R.randrange(1024, 65535)])
        elif k == 15:
            emit("log", [t, " ", lv, " db: connecting to postgres://app:", K(weak_password()), "@db-", str(R.randrange(1, 9)), ".internal:5432/prod"])
        elif k == 16:
            emit("log", [t, " ", lv, " webhook headers: Authorization: Bearer ", K(rnd(40)), " Content-Type: application/json"])
        elif k == 17:
            emit("log", [t, " ", lv, " audit: ", E(), " changed phone from ", P(), " to ", P()])
        elif k == 18:
            emit("log", [t, " ", lv, " fraud score 0.%02d for card ending %s (bin %s) ip " % (R.randrange(100), digits(4), digits(6)), V4()])
        elif k == 19:
            emit("log", [t, " ", lv, " dhcp lease ", V4(), " to 3c:22:fb:%02x:%02x:%02x hostname=laptop-%s" % (R.randrange(256), R.randrange(256), R.randrange(256), pick(FIRST))])
        elif k == 20:
            emit("log", [t, " ", lv, " inet6 ", V6(), "/64 scope global dynamic"])
        else:
            emit("log", [t, " ", lv, " [req %s] customer ssn " % hx(8), S(), " verified email=", E()])


def gen_csv(n):
    headers = [
        ("name,email,phone,city", lambda: [name(), E(), P(), pick(["Berlin", "Austin", "Leeds", "Lyon", "Osaka"])]),
        ("id,customer,card_number,expiry,amount", lambda: [str(R.randrange(1000, 9999)), name(), C(card_digits()), "%02d/%02d" % (R.randrange(1, 13), R.randrange(25, 31)), "%d.%02d" % (R.randrange(10, 999), R.randrange(100))]),
        ("employee_id;full_name;ssn;start_date", lambda: ["E%05d" % R.randrange(99999), name(), S(), "2019-%02d-%02d" % (R.randrange(1, 13), R.randrange(1, 29))]),
        ("account_holder,iban,bic,currency", lambda: [name(), I(iban().replace(" ", "")), rnd(8, string.ascii_uppercase), pick(["EUR", "GBP", "CHF", "PLN"])]),
        ("timestamp,src_ip,dst_ip,bytes", lambda: [ts(), V4(), V4(), str(R.randrange(100, 99999))]),
        ("host\taddress\tstatus", lambda: ["node-%d" % R.randrange(99), V6(), pick(["up", "down", "draining"])]),
        ("user,mobile,ssn", lambda: [pick(FIRST), P(phone_compact_intl()), ("SSN", ssn().replace("-", ""))]),
        ("service,api_key,owner", lambda: [pick(["billing", "search", "mailer"]), K(), E()]),
    ]
    for _ in range(n):
        head, row = pick(headers)
        delim = ";" if ";" in head else ("\t" if "\t" in head else ",")
        parts = [head.replace(",", delim) if delim != "," else head, "\n"]
        for r in range(R.randrange(1, 4)):
            cells = row()
            for i, c in enumerate(cells):
                if i:
                    parts.append(delim)
                if isinstance(c, tuple) and R.randrange(6) == 0 and delim == ",":
                    parts += ['"', c, '"']
                else:
                    parts.append(c)
            parts.append("\n")
        emit("csv", parts[:-1])


def gen_json(n):
    for _ in range(n):
        k = R.randrange(12)
        if k == 0:
            emit("json", ['{"id": %d, "name": "%s", "email": "' % (R.randrange(10 ** 6), name()), E(), '", "phone": "', P(), '"}'])
        elif k == 1:
            emit("json", ['{"customer": {"ssn": "', S(), '", "dob": "1985-%02d-%02d"}}' % (R.randrange(1, 13), R.randrange(1, 29))])
        elif k == 2:
            emit("json", ['{"payment_method": {"type": "card", "number": "', C(card_digits()), '", "exp_month": %d, "exp_year": %d}}' % (R.randrange(1, 13), R.randrange(2025, 2031))])
        elif k == 3:
            emit("json", ['{"beneficiary": "%s", "iban": "' % name(), I(), '", "amount": {"value": %d, "currency": "EUR"}}' % R.randrange(10, 10000)])
        elif k == 4:
            emit("json", ['{"event": "login", "client_ip": "', V4(), '", "ipv6": "', V6(), '", "ok": true}'])
        elif k == 5:
            emit("json", ['{"access_token": "', K(jwt()), '", "token_type": "Bearer", "expires_in": 3600}'])
        elif k == 6:
            emit("json", ['{"credentials": {"client_id": "%s", "client_secret": "' % hx(12), K(secret_value()), '"}}'])
        elif k == 7:
            emit("json", ['[{"email": "', E(), '"}, {"email": "', E(), '"}]'])
        elif k == 8:
            emit("json", ['{"contact":{"mobile":"', P(), '","fax":null,"email":"', E(), '"}}'])
        elif k == 9:
            emit("json", ['{"user":"%s","ssn_last4":"%s","tax_id":"' % (pick(FIRST), digits(4)), S(), '"}'])
        elif k == 10:
            emit("json", ['{"msg": "card ', C(card_digits()), ' declined", "code": "card_declined", "request_id": "req_%s"}' % rnd(14)])
        else:
            emit("json", ['{"items": [], "next_cursor": "%s", "peer": "' % base64.b64encode(json.dumps({"page": R.randrange(2, 50), "size": 50}).encode()).decode(), V4(), '"}'])


def gen_env(n):
    for _ in range(n):
        k = R.randrange(16)
        if k == 0:
            emit("env", ["DATABASE_URL=postgres://app_user:", K(rnd(R.randrange(12, 24))), "@db.example.internal:5432/app"])
        elif k == 1:
            emit("env", ["DB_PASSWORD=", K(weak_password())])
        elif k == 2:
            emit("env", ["SECRET_KEY_BASE=", K("".join(R.choice("0123456789abcdef") for _ in range(128)))])
        elif k == 3:
            emit("env", ["STRIPE_SECRET_KEY=", K("sk_live_" + rnd(24)), "\nSTRIPE_PUBLISHABLE_KEY=pk_live_%s" % rnd(24)])
        elif k == 4:
            emit("env", ["AWS_ACCESS_KEY_ID=", K("AKIA" + rnd(16, string.ascii_uppercase + "234567")), "\nAWS_SECRET_ACCESS_KEY=", K(b64(40)), "\nAWS_REGION=us-east-1"])
        elif k == 5:
            emit("env", ["export GITHUB_TOKEN=", K("ghp_" + rnd(36))])
        elif k == 6:
            emit("env", ["SMTP_USER=", E(), "\nSMTP_PASS=", K(weak_password()), "\nSMTP_HOST=smtp.example.com"])
        elif k == 7:
            emit("env", ["# admin contact\nADMIN_EMAIL=", E(), "\nSUPPORT_PHONE=", P()])
        elif k == 8:
            emit("yaml", ["database:\n  host: db.internal\n  user: app\n  password: ", K(weak_password()), "\n  port: 5432"])
        elif k == 9:
            emit("yaml", ["smtp:\n  from: ", E(), "\n  api_key: ", K(rnd(32)), "\n  timeout: 30s"])
        elif k == 10:
            emit("yaml", ["servers:\n  - name: web1\n    ip: ", V4(), "\n  - name: web2\n    ip: ", V4()])
        elif k == 11:
            emit("yaml", ["tls:\n  key: |\n    ", K(pem().replace("\n", "\n    ")), "\n  cert_file: /etc/tls/cert.pem"])
        elif k == 12:
            emit("yaml", ["slack:\n  webhook_token: ", K("xoxb-" + digits(12) + "-" + digits(13) + "-" + rnd(24)), "\n  channel: '#alerts'"])
        elif k == 13:
            emit("env", ["REDIS_URL=redis://default:", K(rnd(32)), "@cache.internal:6379/0"])
        elif k == 14:
            emit("yaml", ["oncall:\n  name: %s\n  phone: \"" % name(), P(), "\"\n  email: ", E()])
        else:
            emit("env", ["JWT_SIGNING_SECRET=", K(b64(48))])


def gen_urls(n):
    for _ in range(n):
        k = R.randrange(11)
        if k == 0:
            e = email()
            emit("url", ["https://app.example.com/unsubscribe?email=", ("EMAIL", e.replace("@", "%40")), "&list=weekly"])
        elif k == 1:
            emit("url", ["https://api.example.com/v1/lookup?phone=", ("PHONE", "%2B1" + "".join(nanp_parts())), "&country=US"])
        elif k == 2:
            emit("url", ["tel:", P(phone_compact_intl())])
        elif k == 3:
            emit("url", ["mailto:", E(), "?subject=Invoice%20", str(R.randrange(1000, 9999))])
        elif k == 4:
            emit("url", ["https://admin:", K(rnd(16)), "@registry.example.com/v2/"])
        elif k == 5:
            emit("url", ["http://", V4(), ":8080/metrics"])
        elif k == 6:
            emit("url", ["http://[", V6(), "]:9090/api/health"])
        elif k == 7:
            emit("url", ["https://hooks.example.com/callback?token=", K(rnd(40)), "&user=", E()])
        elif k == 8:
            emit("url", ["https://maps.example.com/?q=", pick(FIRST), "&ip=", V4()])
        elif k == 9:
            emit("url", ["smtp://", ("EMAIL", email().replace("@", "%40")), ":", K(weak_password()), "@smtp.example.com:587"])
        else:
            emit("url", ["https://bank.example/transfer?to=", I(iban().replace(" ", "")), "&amount=250.00"])


def gen_traces(n):
    for _ in range(n):
        k = R.randrange(8)
        if k == 0:
            emit("stacktrace", ['Traceback (most recent call last):\n  File "app.py", line %d, in <module>\n    send(user)\n  File "mail.py", line 12, in send\n    raise SMTPRecipientsRefused(addr)\nsmtplib.SMTPRecipientsRefused: {\'' % R.randrange(10, 400), E(), "': (550, b'No such user')}"])
        elif k == 1:
            emit("stacktrace", ['Traceback (most recent call last):\n  File "/srv/billing/charge.py", line 88, in charge\n    gateway.charge(card="', C(card_digits()), '", amount=amount)\nstripe.error.CardError: Your card was declined.'])
        elif k == 2:
            emit("stacktrace", ["Exception in thread \"main\" java.net.ConnectException: Connection refused: /", V4(), ":5432\n\tat java.base/sun.nio.ch.Net.connect0(Native Method)\n\tat org.postgresql.core.PGStream.<init>(PGStream.java:95)"])
        elif k == 3:
            emit("stacktrace", ["ValueError: invalid SSN for customer %d: " % R.randrange(9999), S(), "\n  at validate (validators.py:42)"])
        elif k == 4:
            emit("stacktrace", ['Traceback (most recent call last):\n  File "sync.py", line 30, in <module>\n    client = Client(api_key="', K(secret_value()), '")\nclient.AuthError: 401 Unauthorized'])
        elif k == 5:
            emit("stacktrace", ["panic: dial tcp [", V6(), "]:443: connect: network is unreachable\n\ngoroutine 1 [running]:\nmain.main()\n\t/app/main.go:27 +0x1d"])
        elif k == 6:
            emit("stacktrace", ["KeyError: 'phone'\nDuring handling of the above exception, another exception occurred:\nLookupError: no account for ", P(), " (", E(), ")"])
        else:
            emit("stacktrace", ["at com.bank.Transfer.validate(Transfer.java:112)\ncom.bank.InvalidAccountException: IBAN ", I(), " is blocked"])


def gen_chat(n):
    for _ in range(n):
        k = R.randrange(20)
        if k == 0:
            emit("chat", ["hey, can you add ", E(), " to the channel?"])
        elif k == 1:
            emit("chat", ["You can reach me on ", P(), " after 5pm."])
        elif k == 2:
            emit("chat", ["My SSN is ", S(), ", do you need anything else?"])
        elif k == 3:
            emit("chat", ["Please charge my card ", C(), " for the renewal."])
        elif k == 4:
            emit("chat", ["Wire it to ", I(), " please, reference INV-%d." % R.randrange(1000, 9999)])
        elif k == 5:
            emit("chat", ["the staging box is ", V4(), " if you want to ssh in"])
        elif k == 6:
            emit("chat", ["oops I pasted my token ", K(), " in the wrong channel, rotating it now"])
        elif k == 7:
            emit("chat", ["Forwarding to ", E(), " and ", E(), ", cc me."])
        elif k == 8:
            emit("chat", ["Call the front desk at ", P(), " or email ", E()])
        elif k == 9:
            emit("chat", ["the wifi password is ", K(pick(["Coffee4All!", "Guest2024#", "BlueSky99", "w1f1-Pass"])), " btw"])
        elif k == 10:
            emit("chat", ["SSN: ", S(ssn().replace("-", " ")), " (from the form)"])
        elif k == 11:
            emit("chat", ["Dear ", name(), ",\nyour new card ", C(), " has been shipped. Questions? Call ", P(), "."])
        elif k == 12:
            emit("chat", ["server ", V6(), " is flapping again"])
        elif k == 13:
            emit("chat", ["Ich bin unter ", P("+49 30 " + str(R.randrange(2, 9)) + digits(7)), " erreichbar."])
        elif k == 14:
            emit("chat", ["Mon numéro: ", P("06 %d %s %s %s" % (R.randrange(10, 80), digits(2), digits(2), digits(2))), ", merci!"])
        elif k == 15:
            emit("chat", ["ring me on ", P("07800 " + digits(6)), " or the office ", P("020 7946 0" + digits(3))])
        elif k == 16:
            emit("chat", ["here's the key, don't share it:\n", K(pem())])
        elif k == 17:
            emit("chat", ["new hire ", name(), " <", E(), ">, ssn ", S(ssn().replace("-", "")), ", starts Monday"])
        elif k == 18:
            emit("chat", ["use ", idn_email_ent(), " for the Spanish office"])
        else:
            emit("chat", ["my number changed to ", P(), ", old one was ", P()])


def idn_email_ent():
    return ("EMAIL", idn_email())


def gen_mixed(n):
    # Several kinds glued by the punctuation of real data.
    for _ in range(n):
        k = R.randrange(8)
        if k == 0:
            emit("csv", [name(), ",", E(), ",", P(), ",", S()])
        elif k == 1:
            d = card_digits()
            while len(d) != 16:
                d = card_digits()
            emit("log", ["track1: %B", ("CARD", d), "^%s/%s^%d%s" % (pick(LAST).upper(), pick(FIRST).upper(), R.randrange(25, 31), digits(16))])
        elif k == 2:
            d = card_digits()
            while len(d) != 16:
                d = card_digits()
            emit("log", ["track2: ;", ("CARD", d), "=%d%02d1010000000000?" % (R.randrange(25, 31), R.randrange(1, 13))])
        elif k == 3:
            emit("csv", ["txn,", C(card_digits()), ",", "%d.%02d" % (R.randrange(1, 999), R.randrange(100)), ",", V4()])
        elif k == 4:
            emit("log", ["ip=", V4(), ";email=", E(), ";card=", C(card_digits())])
        elif k == 5:
            emit("json", ['{"a":"', E(), '","b":"', I(), '","c":"', V6(), '"}'])
        elif k == 6:
            emit("log", ["user ", E(), " (", P(), ") from ", V4(), " set ", I()])
        else:
            emit("chat", ["quoted address ", ("EMAIL", '"%s %s"@example.com' % (pick(FIRST), pick(LAST))), " bounced"])


# ---------------------------------------------------------------- negatives

def neg(fmt, text):
    OUT.append({"text": text, "format": fmt, "entities": []})


def luhn_bad(d):
    last = int(d[-1])
    return d[:-1] + str((last + 1) % 10)


def gen_negatives(n):
    gens = [
        lambda: ("log", "%s INFO order ORD-2024-%06d status=PAID total=$%d.99" % (logts(), R.randrange(10 ** 6), R.randrange(10, 999))),
        lambda: ("chat", "ISBN 978-%d-%02d-%06d-%d (paperback)" % (R.randrange(0, 10), R.randrange(10, 99), R.randrange(10 ** 6), R.randrange(10))),
        lambda: ("log", "%s job finished in %dms" % (ts(), R.randrange(10, 90000))),
        lambda: ("chat", "Meeting moved to %02d/%02d/2024 at %02d:%02d." % (R.randrange(1, 29), R.randrange(1, 13), R.randrange(24), R.randrange(60))),
        lambda: ("log", "request_id=%s-%s-%s-%s-%s latency_ms=%d" % (hx(8), hx(4), hx(4), hx(4), hx(12), R.randrange(1000))),
        lambda: ("log", "commit %s\nAuthor: build bot <ci@localhost>" % "".join(R.choice("0123456789abcdef") for _ in range(40))),
        lambda: ("log", "pulling image registry.example.com/app@sha256:%s" % "".join(R.choice("0123456789abcdef") for _ in range(64))),
        lambda: ("chat", "Released v%d.%d.%d.%d with bug fixes" % (R.randrange(1, 13), R.randrange(10), R.randrange(10), R.randrange(300))),
        lambda: ("log", "Microsoft.NETCore.App %d.0.%d.0 [/usr/share/dotnet/shared]" % (R.randrange(3, 9), R.randrange(1, 40))),
        lambda: ("env", "requires numpy>=1.%d.%d and pandas==2.%d.%d.%d" % (R.randrange(30), R.randrange(10), R.randrange(3), R.randrange(5), R.randrange(9))),
        lambda: ("log", "snmp get OID 1.3.6.1.2.1.%d.%d.%d -> %d" % (R.randrange(1, 50), R.randrange(1, 20), R.randrange(1, 9), R.randrange(1000))),
        lambda: ("log", "cert subject attr 2.5.4.%d=%s" % (R.randrange(3, 12), pick(["example.com", "ACME", "DE"]))),
        lambda: ("log", "eth0: netmask 255.255.%s.0 broadcast 0.0.0.0" % pick(["255", "254", "252", "240", "0"])),
        lambda: ("log", "listening on 127.0.0.1:%d and 0.0.0.0:%d" % (R.randrange(1024, 65535), R.randrange(1024, 65535))),
        lambda: ("log", "bind [::1]:%d ok; [::]:%d ok" % (R.randrange(1024, 65535), R.randrange(1024, 65535))),
        lambda: ("csv", "sku,name,qty\nSKU %04d-%03d-%03d,%s widget,%d" % (R.randrange(10000), R.randrange(1000), R.randrange(1000), pick(["blue", "red", "steel"]), R.randrange(100))),
        lambda: ("chat", "Part No. %03d-%04d-%03d in stock" % (R.randrange(1000), R.randrange(10000), R.randrange(1000))),
        lambda: ("log", "git clone git@github.com:%s/%s.git" % (pick(LAST), pick(["api", "web", "infra", "docs"]))),
        lambda: ("log", "GET /static/img/logo@%dx.png 200" % R.randrange(2, 4)),
        lambda: ("json", '{"items": [1, 2], "next_page_token": "%s"}' % base64.b64encode(json.dumps({"offset": R.randrange(100, 9999), "q": pick(["open", "all"])}).encode()).decode()),
        lambda: ("url", "https://api.example.com/v1/events?cursor=%s&limit=50" % base64.urlsafe_b64encode(json.dumps({"after": R.randrange(10 ** 6)}).encode()).decode().rstrip("=")),
        lambda: ("log", "MAC 3c:22:fb:%02x:%02x:%02x joined vlan %d" % (R.randrange(256), R.randrange(256), R.randrange(256), R.randrange(1, 4000))),
        lambda: ("log", "at %02d:%02d:%02d the disk was %d%% full" % (R.randrange(24), R.randrange(60), R.randrange(60), R.randrange(100))),
        lambda: ("chat", "card number %s was declined (invalid number)" % luhn_bad(luhn_complete("4" + digits(5), 16))),
        lambda: ("log", "ssn field contained %s, which is not a valid SSN" % pick(["000-%02d-%04d" % (R.randrange(1, 99), R.randrange(1, 9999)), "666-%02d-%04d" % (R.randrange(1, 99), R.randrange(1, 9999)), "9%02d-%02d-%04d" % (R.randrange(99), R.randrange(1, 99), R.randrange(1, 9999))])),
        lambda: ("chat", "IBAN %s rejected: checksum mismatch" % bad_iban()),
        lambda: ("env", "API_KEY=%s" % pick(["your_api_key_here", "${API_KEY}", "<api-key>", "xxxxxxxxxxxxxxxxxxxx", "changeme-later", "REPLACE_ME"])),
        lambda: ("yaml", "db:\n  password: ${DB_PASSWORD}\n  user: app"),
        lambda: ("env", "DB_PASSWORD=\nDB_USER=app"),
        lambda: ("chat", "email me at %s dot %s at example dot com" % (pick(FIRST), pick(LAST))),
        lambda: ("chat", "@%s thanks! see #%d" % (pick(FIRST), R.randrange(10000))),
        lambda: ("log", "UPS tracking 1Z%s%s" % (rnd(6, string.ascii_uppercase + string.digits), digits(10))),
        lambda: ("log", "FedEx %s out for delivery" % digits(12)),
        lambda: ("chat", "Population grew from %s to %s" % ("{:,}".format(R.randrange(10 ** 6, 10 ** 7)), "{:,}".format(R.randrange(10 ** 6, 10 ** 7)))),
        lambda: ("log", "pid=%d uid=%d gid=%d rss=%dkB" % (R.randrange(1, 99999), R.randrange(1000, 60000), R.randrange(1000, 60000), R.randrange(10 ** 5, 10 ** 7))),
        lambda: ("log", "epoch_ms=%d seq=%d" % (R.randrange(1600000000000, 1800000000000), R.randrange(10 ** 9))),
        lambda: ("json", '{"lat": %.6f, "lon": %.6f, "accuracy": %d}' % (R.uniform(-90, 90), R.uniform(-180, 180), R.randrange(100))),
        lambda: ("chat", "Your Amazon order %03d-%07d-%07d has been delivered." % (R.randrange(100, 999), R.randrange(10 ** 7), R.randrange(10 ** 7))),
        lambda: ("log", "std::vector<int> v; ns::Foo::bar(); // %d" % R.randrange(100)),
        lambda: ("log", "@app.route('/users/<int:id>') def get(id): ..."),
        lambda: ("env", "npm install @%s/utils@%d.%d.%d" % (pick(LAST), R.randrange(10), R.randrange(20), R.randrange(20))),
        lambda: ("chat", "Text JOIN to %d for alerts" % R.randrange(10000, 99999)),
        lambda: ("chat", "In an emergency call 911, or 112 in Europe."),
        lambda: ("log", "css: .btn{color:#%s} @media (max-width: %dpx)" % (hx(6), R.randrange(300, 1200))),
        lambda: ("json", '{"session": "%s", "csrf_token": "%s"}' % (hx(32), hx(40))),
        lambda: ("log", "token=[SECRET_%s] email=[EMAIL_%s] phone=[PHONE_%s]" % (hx(6), hx(6), hx(8))),
        lambda: ("log", "Invoice INV-%d-%05d due in 30 days" % (R.randrange(1000, 9999), R.randrange(10 ** 5))),
        lambda: ("csv", "date,open,close,volume\n2024-%02d-%02d,%d.%02d,%d.%02d,%d" % (R.randrange(1, 13), R.randrange(1, 29), R.randrange(10, 500), R.randrange(100), R.randrange(10, 500), R.randrange(100), R.randrange(10 ** 5, 10 ** 8))),
        lambda: ("chat", "the build number is %d and the PR is #%d" % (R.randrange(10 ** 4, 10 ** 6), R.randrange(10000))),
        lambda: ("log", "IMEI %s registered" % luhn_complete("35" + digits(6), 15)),
        lambda: ("log", "account id %s (internal)" % digits(17)),
        lambda: ("log", "password reset requested for user id %d; password: required field missing" % R.randrange(10 ** 5)),
        lambda: ("yaml", "auth:\n  token_url: https://auth.example.com/oauth/token\n  token_type: bearer\n  public_key_file: /etc/keys/pub.pem"),
        lambda: ("log", "phone lookup failed for id %d: no number on file" % R.randrange(10 ** 6)),
        lambda: ("chat", "the answer is %d.%d and pi is 3.14159265358979" % (R.randrange(100), R.randrange(1000))),
        lambda: ("log", "wildcard mask 0.0.%d.255 applied" % pick([0, 3, 7, 15, 255])),
        lambda: ("log", "route add 10.0.0.0 mask 255.0.0.0 via gateway; version 10.0.%d.%d" % (R.randrange(20000), R.randrange(2000))),
        lambda: ("stacktrace", "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/site-packages/urllib3/connectionpool.py\", line %d, in urlopen\nTimeoutError: timed out after %d.%ds" % (R.randrange(100, 900), R.randrange(60), R.randrange(10))),
        lambda: ("log", "Chrome/%d.0.%d.%d Safari/537.36" % (R.randrange(100, 130), R.randrange(1000, 7000), R.randrange(10, 300))),
        lambda: ("json", '{"uuid": "%s-%s-%s-%s-%s", "version": "1.%d.%d"}' % (hx(8), hx(4), hx(4), hx(4), hx(12), R.randrange(20), R.randrange(20))),
    ]
    for _ in range(n):
        fmt, text = pick(gens)()
        neg(fmt, text)


def bad_iban():
    cc = pick(list(IBAN))
    b = bban(IBAN[cc])
    chk = iban_check(cc, b)
    bad = "%02d" % ((int(chk) + R.randrange(1, 90)) % 97 + 2)
    if bad == chk:
        bad = "%02d" % ((int(chk) + 1) % 97 + 2)
    v = cc + bad + b
    return " ".join(v[i:i + 4] for i in range(0, len(v), 4))


def hand(path):
    """The hand-written samples of hand.txt (see its header)."""
    import os
    import re
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), path), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fmt, text = line.split("|", 1)
            text = text.replace("\\n", "\n")
            parts = []
            last = 0
            for m in re.finditer(r"⟦([A-Z0-9]+)\|(.*?)⟧", text, re.S):
                parts.append(text[last:m.start()])
                parts.append((m.group(1), m.group(2)))
                last = m.end()
            parts.append(text[last:])
            emit(fmt, parts)


def main():
    gen_logs(230)
    gen_csv(110)
    gen_json(150)
    gen_env(150)
    gen_urls(110)
    gen_traces(80)
    gen_chat(200)
    gen_mixed(80)
    gen_negatives(420)
    R.shuffle(OUT)
    hand("hand.txt")
    for o in OUT:
        sys.stdout.write(json.dumps(o, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
