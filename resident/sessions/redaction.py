"""Redaction: every secret a transcript may hold is replaced before anything of it is written.

Three rules, applied to every string of a transcript (each JSON string value and key, decoded, so
a secret hidden behind JSON escapes is seen whole; a line that is not JSON as its text):

1. **Values the runtime injected** (the session's grant token) are replaced wherever they occur.
2. **A curated table of credential formats** — cloud keys, GitHub and GitLab tokens, the API keys
   of model providers, chat webhooks, mail and SMS keys, JWTs, private-key blocks, credentials in URLs,
   a password glued to `mysql -p`, bearer and basic
   authorization — matched as whole tokens: a match must not continue a longer word, so an id
   that merely contains `sk-` is left alone.
3. **Assignments and headers** (`NAME=value`, `NAME: value`, `"name": "value"`, `--name=value`,
   `X-Header: value`): when the name says it holds a secret (`password`, `token`, `api_key`,
   `client_secret`, `cookie`, …) the value is replaced unless it is a placeholder (`${VAR}`,
   `<token>`, `changeme`, a number, `****`) or a short plain word (`bearer`); under any other name
   the value is replaced only when it looks random (Shannon entropy of at least 4 bits a character
   over at least 24 characters, with an unbroken run of 20 letters and digits, mixed, not a path or
   a hex digest) and the name
   does not say it is an identifier (`requestId`, `commit_sha`, `etag`). Entropy is
   checked nowhere else: random-looking ids in prose, commit hashes and UUIDs stay readable.

Each hit becomes `[REDACTED:<type>:<hash>]`, where the hash is the first 8 hex digits of an HMAC of
the value under a key private to the home: the same secret gets the same mark everywhere (so the
owner can tell two leaks of one key apart from two keys), and a mark cannot be used to confirm a
guessed password without the key. Redacting redacted text changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MARK", "PATTERNS", "Redactor", "is_placeholder", "looks_random", "names_a_secret", "names_an_identifier",
]

MARK = re.compile(r"\[REDACTED:[a-z0-9-]+:[0-9a-f]{8}\]")
# Neither side of a whole-token match may continue the token.
_BEFORE = r"(?<![A-Za-z0-9_\-])"
_AFTER = r"(?![A-Za-z0-9_\-])"


@dataclass(frozen=True)
class _Pattern:
    """One credential format: its type, a regex whose `secret` group (else the whole match) is replaced,
    and the literal text any match holds (`folded`: in lower case), checked first (see `_candidates`)."""

    type: str
    regex: re.Pattern[str]
    hints: tuple[str, ...]
    folded: bool = False


def _token(type_: str, body: str, *hints: str) -> _Pattern:
    return _Pattern(type_, re.compile(_BEFORE + body + _AFTER), hints)


_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
_GITLAB_PREFIXES = ("glpat", "gloas", "gldt", "glrt", "glptt", "glft", "glsoat", "glcbt", "glimt", "glagent")

# Order matters where two formats overlap at one place: the first listed names the hit.
PATTERNS: tuple[_Pattern, ...] = (
    # The runtime's own grant tokens, whether or not this redactor was given the session's.
    _token("resident-grant-token", r"rgt_[A-Za-z0-9_\-]{43}", "rgt_"),
    _Pattern(
        "private-key",
        re.compile(
            r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,65536}?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)"
        ),
        ("PRIVATE KEY",),
    ),
    _token("aws-access-key", rf"(?:{'|'.join(_AWS_PREFIXES)})[0-9A-Z]{{16}}", *_AWS_PREFIXES),
    _Pattern(
        "aws-secret-key",
        re.compile(r"(?i)aws_?secret_?access_?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"),
        ("aws",), folded=True,
    ),
    _token("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", "AIza"),
    _Pattern("azure-storage-key", re.compile(r"AccountKey=(?P<secret>[A-Za-z0-9+/]{86}==)"), ("AccountKey=",)),
    _token(
        "github-token", r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    ),
    _token(
        "gitlab-token", rf"(?:{'|'.join(_GITLAB_PREFIXES)})-[A-Za-z0-9_\-]{{20,255}}",
        *(f"{prefix}-" for prefix in _GITLAB_PREFIXES),
    ),
    _token("anthropic-key", r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_\-]{32,255}", "sk-ant-"),
    _token("openrouter-key", r"sk-or-v1-[a-f0-9]{64}", "sk-or-v1-"),
    _token("openai-key", r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]{0,255}[0-9])[A-Za-z0-9_\-]{20,255}", "sk-"),
    _token("huggingface-token", r"hf_[A-Za-z0-9]{30,60}", "hf_"),
    _token("groq-key", r"gsk_[A-Za-z0-9]{48,64}", "gsk_"),
    _token("xai-key", r"xai-[A-Za-z0-9]{60,100}", "xai-"),
    _token("replicate-token", r"r8_[A-Za-z0-9]{37}", "r8_"),
    _token("perplexity-key", r"pplx-[A-Za-z0-9]{40,64}", "pplx-"),
    _token("slack-token", r"xox[abposr]-[A-Za-z0-9\-]{10,255}", "xox"),
    # A webhook URL is its own credential: whoever holds the path can post to the channel.
    _Pattern(
        "slack-webhook",
        re.compile(r"hooks\.slack\.com/(?P<secret>(?:services|workflows|triggers)/[A-Za-z0-9_\-/]{20,255})"),
        ("hooks.slack.com/",),
    ),
    _token("sendgrid-key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{32,64}", "SG."),
    _token("twilio-key", r"SK[0-9a-fA-F]{32}", "SK"),
    _token("stripe-key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,255}", "_live_", "_test_"),
    _token("npm-token", r"npm_[A-Za-z0-9]{36}", "npm_"),
    _token("pypi-token", r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}", "pypi-AgEI"),
    _token("jwt", r"eyJ[A-Za-z0-9_\-]{6,}\.eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]{6,}", "eyJ"),
    _Pattern(
        "url-credentials", re.compile(r"[A-Za-z][A-Za-z0-9+.\-]{1,20}://(?P<secret>[^\s:/@'\"<>]+:[^\s/@'\"<>]+)@"),
        ("://",),
    ),
    _Pattern(
        "bearer", re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s+(?P<secret>(?=\S{0,400}\d)[A-Za-z0-9\-._~+/]{16,400}=*)"),
        ("bearer",), folded=True,
    ),
    # `mysql -pPASS` (the password glued to `-p`, the only form the client takes on its command line).
    _Pattern(
        "mysql-password",
        re.compile(
            r"(?i)(?<![A-Za-z0-9_\-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb(?:-dump|-admin)?)"
            r"(?:\s+[^\s|;&]+){0,16}?\s+-p(?P<secret>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"|;&]+)"
        ),
        ("mysql", "mariadb"), folded=True,
    ),
    _Pattern(
        "basic-auth", re.compile(r"(?i)authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}=*)"),
        ("authorization",), folded=True,
    ),
)

# `NAME = value`, `NAME: value`, `"NAME": "value"`, `--name=value`, `X-Header: value`. The value
# ends at whitespace, a quote or a separator; only it is replaced.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,80})[\"']?[ \t]*(?::=|=>|=|:)[ \t]*[\"']?"
    r"(?P<value>[^\s\"'`,;(){}\[\]<>\\]{1,4096})"
)
# A quoted value may hold spaces (`password: "correct horse battery"`, YAML and shell alike): under a
# secret name the whole quoted text is the value.
_QUOTED_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,80})[\"']?[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?P<quote>[\"'])(?P<value>[^\"'\n]{1,4096})(?P=quote)"
)
# A text can hold a rule-3 hit only if it names a secret somewhere (one of these, in lower case, is
# part of every secret name) or holds a run as long as a random-looking value's.
_SECRET_HINTS = re.compile("secret|passw|pwd|passphrase|token|key|credential|cookie|auth")
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/]{20}")
_SECRET_WORDS = frozenset({
    "secret", "secrets", "password", "passwd", "pwd", "passphrase", "token", "apikey", "credential", "credentials",
    "cookie", "auth", "privatekey", "accesskey", "secretkey", "sessionkey", "signingkey",
})
_SECRET_PAIRS = frozenset({
    ("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("client", "secret"),
    ("session", "key"), ("signing", "key"), ("encryption", "key"), ("master", "key"), ("account", "key"),
})
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
# A name that ends in one of these holds an identifier: random-looking by design, and no secret.
_IDENTIFIER_WORDS = frozenset({"id", "ids", "uuid", "hash", "digest", "sha", "checksum", "etag", "commit", "ref"})
_PLACEHOLDERS = frozenset({
    "null", "none", "nil", "true", "false", "undefined", "changeme", "change-me", "redacted", "secret", "password",
    "token", "xxx", "example", "placeholder", "your-token", "your-key", "your-api-key", "...", "\u2026",
})
_HEX_LIKE = re.compile(r"[0-9a-fA-F\-]+")
MIN_RANDOM_LENGTH = 24
MIN_RANDOM_BITS = 4.0
MIN_RANDOM_RUN = 20
_RUNS = re.compile(r"[A-Za-z0-9+/]+")
# A secret-named value this short and made of letters only is a word (`bearer`, `basic`), not a secret.
_MIN_PLAIN_WORD_SECRET = 8
# No rule finds anything in a shorter text: the shortest hit is a secret-named assignment, `pwd=a1`.
_SHORTEST = 6


def names_a_secret(name: str) -> bool:
    """Whether an assignment's or header's name says that its value is a secret."""
    parts = [part.lower() for part in _NAME_PARTS.findall(name)]
    if any(part in _SECRET_WORDS for part in parts):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(parts))


def names_an_identifier(name: str) -> bool:
    """Whether an assignment's name says its value is an identifier (`requestId`, `commit_sha`, `etag`)."""
    parts = _NAME_PARTS.findall(name)
    return bool(parts) and parts[-1].lower() in _IDENTIFIER_WORDS


def is_placeholder(value: str) -> bool:
    """A value that stands for a secret without being one (`${TOKEN}`, `<key>`, `****`, a number, a mark)."""
    stripped = value.strip()
    if not stripped or stripped.lower() in _PLACEHOLDERS or len(set(stripped)) == 1:
        return True
    if stripped[0] in "$%<{" or stripped.startswith("[REDACTED"):
        return True
    return stripped.replace(".", "", 1).isdigit()


def _entropy(value: str) -> float:
    counts = Counter(value)
    length = len(value)
    return -sum(count / length * math.log2(count / length) for count in counts.values())


def looks_random(value: str) -> bool:
    """Whether a value in assignment or header context looks like a generated secret.

    Generated secrets hold a long unbroken run of letters and digits; names made of words and
    numbers joined by dashes (`claude-opus-4-1-20250805`) do not, however varied their characters.
    """
    if len(value) < MIN_RANDOM_LENGTH or is_placeholder(value) or value[0] in "/.~" or "://" in value:
        return False
    if _HEX_LIKE.fullmatch(value):
        return False  # digests, UUIDs, commit ids: readable identifiers, and hex alone tops out at 4 bits
    run = max(_RUNS.findall(value), key=len, default="")
    if len(run) < MIN_RANDOM_RUN:
        return False
    classes = sum(any(test(c) for c in run) for test in (str.islower, str.isupper, str.isdigit))
    return classes >= 2 and _entropy(value) >= MIN_RANDOM_BITS


def _secret_value(value: str) -> bool:
    """Whether the value of a secret-named assignment is itself a secret (see the module docstring)."""
    if is_placeholder(value):
        return False
    return len(value) >= _MIN_PLAIN_WORD_SECRET or not value.isalpha()


def _literals(hints: Iterable[str]) -> re.Pattern[str]:
    # Longest first, so a hint that begins another (`sk-` of `sk-ant-`) does not hide it.
    return re.compile("|".join(re.escape(hint) for hint in sorted(set(hints), key=len, reverse=True)))


_HINTS = _literals(hint for pattern in PATTERNS if not pattern.folded for hint in pattern.hints)
_FOLDED_HINTS = _literals(hint for pattern in PATTERNS if pattern.folded for hint in pattern.hints)


def _candidates(text: str, lower: str) -> list[tuple[int, _Pattern]]:
    """The formats whose literal part occurs in `text` (with their priority): only they can match.

    One scan for every literal spares running each format's regex on every string, which was most
    of the work on ordinary text (`bench/sessions.py`, figures in `bench/RESULTS.md`).
    """
    present = set(_HINTS.findall(text)) | set(_FOLDED_HINTS.findall(lower))
    if not present:
        return []
    return [(priority, pattern) for priority, pattern in enumerate(PATTERNS) if present.intersection(pattern.hints)]


class Redactor:
    """Redacts text and JSON values for one transcript, counting hits by type (never keeping values)."""

    def __init__(self, key: bytes, injected: Iterable[str] = ()) -> None:
        self._key = key
        # Longest first, so a value that contains another injected value is replaced whole.
        self._injected = sorted({value for value in injected if len(value) >= 8}, key=len, reverse=True)
        self.counts: Counter[str] = Counter()

    def mark(self, kind: str, secret: str) -> str:
        """The mark that replaces `secret`, a hit of type `kind`."""
        self.counts[kind] += 1
        digest = hmac.new(self._key, secret.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return f"[REDACTED:{kind}:{digest[:8]}]"

    def redact(self, text: str) -> str:
        """`text` with every secret replaced by its mark."""
        if len(text) < _SHORTEST:
            return text  # keys, roles, kinds: too short to hold any secret the rules find
        for value in self._injected:
            if value in text:
                text = text.replace(value, self.mark("injected", value))
        spans = self._spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        position = 0
        for start, end, kind in spans:
            pieces += [text[position:start], self.mark(kind, text[start:end])]
            position = end
        pieces.append(text[position:])
        return "".join(pieces)

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """Where secrets are: non-overlapping spans, earliest first (the first format listed wins a tie)."""
        found: list[tuple[int, int, int, str]] = []
        lower = text.lower()
        for priority, pattern in _candidates(text, lower):
            group = "secret" if "secret" in pattern.regex.groupindex else 0
            for match in pattern.regex.finditer(text):
                start, end = match.span(group)
                if end > start:
                    found.append((start, -end, priority, pattern.type))
        hinted = _SECRET_HINTS.search(lower) or _RANDOM_RUN.search(text)
        assignments = _ASSIGNMENT.finditer(text) if hinted else ()
        for match in assignments:
            value = match.group("value")
            if names_a_secret(match.group("name")):
                if _secret_value(value):
                    found.append((match.start("value"), -match.end("value"), len(PATTERNS), "secret-assignment"))
            elif looks_random(value) and not names_an_identifier(match.group("name")):
                found.append((match.start("value"), -match.end("value"), len(PATTERNS) + 1, "high-entropy"))
        if hinted:
            for match in _QUOTED_ASSIGNMENT.finditer(text):
                value = match.group("value")
                if names_a_secret(match.group("name")) and _secret_value(value) and not MARK.fullmatch(value):
                    found.append((match.start("value"), -match.end("value"), len(PATTERNS), "secret-assignment"))
        if not found:
            return []
        # Marks already in the text are left as they are: redacting twice changes nothing.
        marks = [match.span() for match in MARK.finditer(text)]
        spans: list[tuple[int, int, str]] = []
        for start, negative_end, _priority, kind in sorted(found):
            end = -negative_end
            if (spans and start < spans[-1][1]) or any(start < m_end and m_start < end for m_start, m_end in marks):
                continue
            spans.append((start, end, kind))
        return spans

    def redact_json(self, value: Any) -> Any:
        """A decoded JSON value with every string (keys too) redacted; a secret-named field's value whole."""
        match value:
            case str():
                return self.redact(value)
            case list():
                return [self.redact_json(item) for item in value]
            case dict():
                redacted: dict[str, Any] = {}
                for key, item in value.items():
                    if isinstance(item, str) and isinstance(key, str) and names_a_secret(key) and _secret_value(item):
                        redacted[self.redact(key)] = self.mark("secret-assignment", item)
                    else:
                        redacted[self.redact(key) if isinstance(key, str) else key] = self.redact_json(item)
                return redacted
            case _:
                return value
