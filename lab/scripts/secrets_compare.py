"""difill's redaction (server/context/policy.py) against detect-secrets on the same lines: how many
real secret shapes each catches, how many lines of ordinary code each flags (a false positive
costs a suggestion: the model then reads ``<redacted>``), and how long each takes per 100 KB.

Run with a Python that has detect-secrets (it is not a difill dependency):

    python3 -m venv /tmp/ds && /tmp/ds/bin/pip install detect-secrets==1.5.0
    PYTHONPATH=src /tmp/ds/bin/python -m lab.scripts.secrets_compare

detect-secrets runs as its own scanner does on a file (``SecretsCollection.scan_file``, default
plugins and filters); its secrets are replaced in the line to count what it would redact.  The
secret samples are made here with each kind's real shape and random characters (seeded); the
ordinary code is the standard library's own modules (the ``--code`` folder).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from difill.server.context.policy import redact

ALNUM = string.ascii_letters + string.digits
PER_KIND = 10


def pick(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def jwt(rng: random.Random) -> str:
    """A well-formed JWT (detect-secrets decodes the header and payload): HS256, a random subject."""
    part = lambda data: base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")  # noqa: E731
    claims = {"sub": pick(rng, ALNUM, 12), "iat": rng.randrange(1_600_000_000, 1_800_000_000)}
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part(claims)}.{pick(rng, ALNUM + '-_', 43)}"


def secret_lines(rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, the secret, a line of code holding it), ``PER_KIND`` of each kind."""
    up, hexd, b64 = string.ascii_uppercase + string.digits, "0123456789abcdef", ALNUM + "+/"
    makers = {
        "aws access key id": lambda: "AKIA" + pick(rng, up, 16),
        "aws secret key": lambda: pick(rng, b64, 40),
        "github token": lambda: "ghp_" + pick(rng, ALNUM, 36),
        "github fine-grained": lambda: "github_pat_" + pick(rng, ALNUM + "_", 82),
        "slack token": lambda: "xoxb-" + pick(rng, string.digits, 12) + "-" + pick(rng, ALNUM, 24),
        "openai key": lambda: "sk-proj-" + pick(rng, ALNUM + "-_", 48),
        "stripe key": lambda: "sk_live_" + pick(rng, ALNUM, 24),
        "google api key": lambda: "AIza" + pick(rng, ALNUM + "-_", 35),
        "jwt": lambda: jwt(rng),
        "sendgrid key": lambda: "SG." + pick(rng, ALNUM, 22) + "." + pick(rng, ALNUM, 43),
        "hex token (40)": lambda: pick(rng, hexd, 40),
        "hex token (32)": lambda: pick(rng, hexd, 32),
        "url password": lambda: pick(rng, ALNUM, 14),
        "password literal": lambda: pick(rng, string.ascii_lowercase, 6) + pick(rng, string.digits, 4) + "!",
    }
    holders = {
        "url password": lambda s: f'DATABASE_URL = "postgresql://app:{s}@db.internal:5432/app"',
        "password literal": lambda s: f'    password = "{s}"',
        "aws secret key": lambda s: f'aws_secret_access_key = "{s}"',
    }
    lines = []
    for kind, make in makers.items():
        for k in range(PER_KIND):
            secret = make()
            # Half assigned to a name, half passed to a call: detect-secrets' filters treat them apart.
            other = (
                (lambda s: f'SETTING = "{s}"') if k % 2 else (lambda s: f'    client = Client(token="{s}")')
            )
            lines.append((kind, secret, holders.get(kind, other)(secret)))
    return lines


def detect_secrets_redact(lines: list[str]) -> tuple[list[str], float]:
    """Each line with what detect-secrets finds in it replaced, and the seconds its scan took."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scanned.py"
        path.write_text("\n".join(lines) + "\n")
        with default_settings():
            collection = SecretsCollection()
            started = time.perf_counter()
            collection.scan_file(str(path))
            seconds = time.perf_counter() - started
    out = list(lines)
    for secrets in collection.data.values():
        for secret in secrets:
            k = secret.line_number - 1
            if secret.secret_value:
                out[k] = out[k].replace(secret.secret_value, "<redacted>")
    return out, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", default=sysconfig.get_paths()["stdlib"], help="a folder of ordinary Python")
    parser.add_argument("--files", type=int, default=60, help="modules read from --code (sorted by name)")
    args = parser.parse_args()
    rng = random.Random(0)
    samples = secret_lines(rng)
    code: list[str] = []
    for path in sorted(Path(args.code).glob("*.py"))[: args.files]:
        code += path.read_text(encoding="utf-8", errors="replace").splitlines()
    size_kb = sum(len(line) + 1 for line in code) / 1024

    started = time.perf_counter()
    ours_code = [redact(line) for line in code]
    ours_s = time.perf_counter() - started
    ours_secrets = [redact(line) for _, _, line in samples]
    theirs_code, theirs_s = detect_secrets_redact(code)
    theirs_secrets, _ = detect_secrets_redact([line for _, _, line in samples])

    print(
        f"{len(samples)} secret lines ({len(samples) // PER_KIND} kinds x {PER_KIND}); {len(code)} lines of code ({size_kb:.0f} KB)"
    )
    print("| kind | difill redact | detect-secrets 1.5.0 |\n|---|---|---|")
    kinds = list(dict.fromkeys(kind for kind, _, _ in samples))
    for kind in kinds:
        rows = [k for k, (kk, _, _) in enumerate(samples) if kk == kind]
        mine = sum(samples[k][1] not in ours_secrets[k] for k in rows)
        theirs = sum(samples[k][1] not in theirs_secrets[k] for k in rows)
        print(f"| {kind} | {mine}/{len(rows)} | {theirs}/{len(rows)} |")
    caught_mine = sum(s not in o for (_, s, _), o in zip(samples, ours_secrets, strict=True))
    caught_theirs = sum(s not in o for (_, s, _), o in zip(samples, theirs_secrets, strict=True))
    fp_mine = sum(a != b for a, b in zip(code, ours_code, strict=True))
    fp_theirs = sum(a != b for a, b in zip(code, theirs_code, strict=True))
    print(f"| **secrets caught** | {caught_mine}/{len(samples)} | {caught_theirs}/{len(samples)} |")
    print(
        f"| **code lines changed** (false positives) | {fp_mine} ({fp_mine / len(code):.2%}) | {fp_theirs} ({fp_theirs / len(code):.2%}) |"
    )
    print(
        f"| **time per 100 KB** | {ours_s / size_kb * 100 * 1000:.1f} ms | {theirs_s / size_kb * 100 * 1000:.1f} ms |"
    )
    examples = [(a, b) for a, b in zip(code, ours_code, strict=True) if a != b][:5]
    for a, _ in examples:
        print("difill changed:", a.strip()[:100])
    examples = [(a, b) for a, b in zip(code, theirs_code, strict=True) if a != b][:5]
    for a, _ in examples:
        print("detect-secrets changed:", a.strip()[:100])
    return 0


if __name__ == "__main__":
    sys.exit(main())
