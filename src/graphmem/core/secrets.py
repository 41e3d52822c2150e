"""Secrets in text: found by their published formats, and replaced by a marker that says what
they were (`[redacted: GitHub token]`).

What is found (each rule names the kind the marker shows):

- tokens and keys of common providers, by the prefix and length their makers publish (GitHub,
  GitLab, Slack, AWS, Google, OpenAI, Anthropic, Stripe, SendGrid, npm, PyPI, Hugging Face,
  Discord, Telegram, DigitalOcean, Shopify, Databricks, Linear, Mailgun, Twilio);
- private keys: PEM and OpenSSH blocks, the whole block (or to the end of the text when it is
  cut off);
- JSON Web Tokens; `Bearer` tokens; `Basic` credentials (base64 of `user:password`);
- the password of a connection URL (`postgres://app:<password>@db`): the password alone;
- a value beside a key-like name (`api_key = ...`, `DB_PASSWORD=...`, `"client_secret": "..."`):
  a password of 6 characters or more that is not a plain word, any other value of 16 or more
  that looks random (two kinds of character, and entropy that words and hashes of one case
  do not reach).

What is never a secret by itself: a commit hash, a UUID, a base64 image, a long number, a
word: none of them matches a rule, since the generic one asks for a key-like name beside the
value. The marker itself matches no rule, so redacting twice changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Secret", "find_secrets", "marker", "redact"]

_MARKER = "[redacted: {kind}]"


def marker(kind: str) -> str:
    """What stands in a text where a secret of `kind` was."""
    return _MARKER.format(kind=kind)


@dataclass(frozen=True, slots=True)
class Secret:
    """A secret found in a text: what it is, and where (`text[start:end]`)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0
    """The group that is the secret (a URL's password, a name's value); 0: the whole match."""


def _rule(kind: str, pattern: str, group: int = 0, flags: int = 0) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags), group)


# Word edges that a token's own characters never cross: a token inside a longer run of them
# is not that token.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

_PROVIDERS: tuple[_Rule, ...] = (
    _rule("GitHub token", _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{60,255})" + _E),
    _rule("GitLab token", _B + r"gl(?:pat|dt|rt|ptt|cbt|soat)-[A-Za-z0-9_-]{20,64}" + _E),
    _rule("Slack token", _B + r"xox[abposr]-(?:[0-9]+-)*[A-Za-z0-9-]{10,250}" + _E),
    _rule("Slack webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}"),
    _rule("AWS access key", r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    _rule("Google API key", _B + r"AIza[A-Za-z0-9_-]{35}" + _E),
    _rule("Anthropic key", _B + r"sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{32,255}" + _E),
    _rule("OpenAI key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,}" + _E),
    _rule("OpenAI key", _B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,255}" + _E),
    _rule("OpenAI key", _B + r"sk-[A-Za-z0-9]{48}" + _E),
    _rule("Stripe key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,255}" + _E),
    _rule("Stripe webhook secret", _B + r"whsec_[A-Za-z0-9]{32,}" + _E),
    _rule("SendGrid key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}" + _E),
    _rule("npm token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
    _rule("PyPI token", _B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}" + _E),
    _rule("Hugging Face token", _B + r"hf_[A-Za-z0-9]{34,40}" + _E),
    _rule("Discord token", _B + r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _E),
    _rule("Telegram bot token", r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _E),
    _rule("DigitalOcean token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E),
    _rule("Shopify token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E),
    _rule("Databricks token", _B + r"dapi[a-f0-9]{32}(?:-[0-9])?" + _E),
    _rule("Linear key", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _E),
    _rule("Mailgun key", r"(?i:mailgun)\S*\s*\S*\s*" + _B + r"(key-[0-9a-f]{32})" + _E, 1),
    _rule("Twilio key", _B + r"SK[0-9a-f]{32}" + _E),
)

_PRIVATE_KEY = _rule(
    "private key",
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    flags=re.DOTALL,
)
_JWT = _rule("JWT", _B + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}" + _E)
_BEARER = _rule("bearer token", r"(?i:\bbearer)\s+((?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*)", 1)
_BASIC = _rule("basic credentials", r"(?i:\bbasic)\s+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", 1)
_URL_PASSWORD = _rule(
    # The scheme starts a run and is short: an unbounded one costs a square on a long run of letters.
    "password in a URL",
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s/:@?#]{1,256}:([^\s/@\[?#]{1,256}(?:\[[^\s/@]*)?)@",
    1,
)
_NAMED = _rule(
    "secret value",
    # A key-like name (in any case, inside a longer one: DB_PASSWORD, stripe.secretKey), then
    # `=`, `:` or `=>` (a quote may close the name first), then the value, quoted or not.
    # (The name's parts are bounded: unbounded, a long run of such characters costs a square.)
    # A name starts where a run of name characters starts: a look from inside a run fails at once.
    r"(?i)(?<![A-Za-z0-9_.-])(?P<name>[A-Za-z0-9_.-]{0,40}(?:api[_.-]?key|apikey|secret|token|passwd|password|passphrase|pwd"
    r"|access[_.-]?key|auth[_.-]?key|private[_.-]?key|client[_.-]?secret|credentials?)[A-Za-z0-9_.-]{0,40})"
    r"""["']?\s*(?:=>|[:=])\s*(?:(?P<quote>["'])(?P<quoted>[^"'\n]{6,4096})(?P=quote)"""
    r"""|(?P<value>[^\s"'`,;<>(){}\[\]]{6,4096})(?P<call>\(?))""",
)

_PLACEHOLDERS = re.compile(
    r"(?i)^(?:x+|\*+|\.+|#+|-+|_+|none|null|nil|true|false|undefined|required|optional|changeme|redacted"
    r"|pass(?:word|wd)?|pwd|pw|secret|token"
    r"|example|placeholder|your[_-]?\w*|my[_-]?\w*|\$\w+|\$\{.*|%\w+%|env(?:iron)?\b.*|process\.env.*|os\.environ.*"
    r"|get(?:env|_secret)\b.*|\w+\(.*)$"
)
_PASSWORDISH = re.compile(r"(?i)passw|passphrase|pwd")


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_random(value: str) -> bool:
    """Long, of at least two kinds of character, and of an entropy words and one-case hashes
    do not reach (a sha1 in hex: about 3.7 bits a character, one kind: lower hex digits mix
    letters and digits, so the bar for them is higher)."""
    if len(value) < 16:
        return False
    kinds = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    if kinds < 2:
        return False
    bar = 4.2 if re.fullmatch(r"[0-9a-f-]+|[0-9A-F-]+", value) else 3.5
    return _entropy(value) >= bar


def _is_password(value: str) -> bool:
    """A password beside its name: not a plain word (one of letters, one case or capitalised)."""
    return not re.fullmatch(r"[A-Za-z][a-z]*|[A-Z]+", value)


def _basic_credentials(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii() and decoded[:1] != b":"


_VERSION = re.compile(r"\d+(?:\.\d+)*")
_WORDS_JOINED = re.compile(r"(?:[a-z]{3,}|\d{1,4})(?:[-_./](?:[a-z]{3,}|\d{1,4}))+")
"""Words joined by dashes or dots (tls-cert-production-2024): a name, however long."""

# Passwords said in a command line or in prose: `--password X`, `curl -u user:X`, "password is X".
# A value on a command line: quoted whole (a passphrase may have spaces), else to the next space.
_ARGUMENT = r"""(?:'([^'\n]{4,256})'|"([^"\n]{4,256})"|([^\s'"]\S{3,255}))"""
_SAID = (
    _rule("password", r"(?i)(?<![\w-])--pass(?:word)?[= ]+(?![-\[])" + _ARGUMENT),
    _rule("password", r"(?<![\w-])-u\s+[^\s:]{1,64}:(\S{4,256})"),
    _rule("password", r"(?i)\bpass(?:word|phrase)\s+is\s+(\S{6,256})"),
)
# MySQL's clients take the password joined to -p, in the same command (-P, a capital, is the
# port; a number after -p is one too, or another command's: ssh -p2222, docker -p3306:3306).
_MYSQL_P = _rule(
    "password",
    r"(?i:\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb)\s)[^\n|;&]{0,120}?(?<![\w-])-p" + _ARGUMENT,
)
_PORT = re.compile(r"\d+(?::\d+)*")

_CODE_OR_PATH = re.compile(
    r"^(?:[/~.]|[A-Za-z][\w-]*://|\$|%|\{\{)"  # a path, a URL, a variable, a template
    r"|^[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+$"  # a dotted name in code (settings.SECRET_KEY)
    r"|^(?:str|int|bytes|bool|none|optional|typing|field)\b"  # a type annotation
    r"|(?i:your|here|example|placeholder|changeme|redacted|dummy|sample|xxx)",
    re.IGNORECASE,
)
_NOT_A_SECRET_NAME = re.compile(
    r"(?i)(?:_hint|-hint|policy|length|reset|less|_file|_path|_url|_uri|_endpoint|ref|izer)$"
)
"""Names beside which a value is about a secret, not one: a path to it, a rule for it."""


def _named_values(text: str) -> Iterator[Secret]:
    for match in _NAMED.pattern.finditer(text):
        group = "quoted" if match.group("quoted") is not None else "value"
        value = match.group(group)
        if match.group("call"):
            continue  # password = get_password(): a call in code
        if value.startswith("[redacted") or _PLACEHOLDERS.match(value) or _CODE_OR_PATH.search(value):
            continue
        name = match.group("name")
        if _NOT_A_SECRET_NAME.search(name) or name.lower() in ("pwd",) and value.startswith(("/", "~")):
            continue
        if _PASSWORDISH.search(name):
            # A quoted passphrase may have spaces; a plain word alone is no password.
            if group == "quoted" and len(value.split()) > 1 or _is_password(value):
                yield Secret("password", match.start(group), match.end(group))
        elif _looks_random(value) and not _WORDS_JOINED.fullmatch(value.lower()):
            yield Secret("secret value", match.start(group), match.end(group))


# A quick look that every text with a secret passes, so that most texts pay only this (0.6 us
# for a sentence, against 2.5 for a look for each rule's start): a word that a rule needs
# beside its secret, or a run of 20 token characters, which every provider's token, every
# JWT and every key-like value of the generic rule is.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_+/=.-]{20,}")


def _may_hold_a_secret(text: str) -> bool:
    low = text.lower()
    # Written out: `any()` over a tuple of words costs twice as much.
    return (
        "pass" in low
        or "pwd" in low
        or "secret" in low
        or "token" in low
        or "key" in low
        or "cred" in low
        or "auth" in low
        or "bearer" in low
        or "basic" in low
        or "://" in low
        or "begin" in low
        or "mysql" in low
        or "mariadb" in low
        or _TOKEN_RUN.search(text) is not None
    )


def find_secrets(text: str) -> list[Secret]:
    """The secrets in `text`, in order, none overlapping (where two rules overlap, the first
    found, then the longer, is kept)."""
    if len(text) < 8 or not _may_hold_a_secret(text):
        return []
    found: list[Secret] = []
    for rule in (*_PROVIDERS, _PRIVATE_KEY, _JWT, _URL_PASSWORD):
        for match in rule.pattern.finditer(text):
            start, end = match.span(rule.group)
            secret = match.group(rule.group)
            if rule is _URL_PASSWORD and (
                secret.startswith("[redacted") or _PLACEHOLDERS.match(secret) or _VERSION.fullmatch(secret)
            ):
                continue  # a placeholder, or a port or version (docker://alpine:3.19@sha256)
            found.append(Secret(rule.kind, start, end))
    for rule in (*_SAID, _MYSQL_P):
        for match in rule.pattern.finditer(text):
            group = next(index for index in range(1, rule.pattern.groups + 1) if match.group(index) is not None)
            value = match.group(group)
            if (
                _is_password(value.rstrip(".,;"))
                and not _PLACEHOLDERS.match(value)
                and not _CODE_OR_PATH.search(value)
                and not (rule is _MYSQL_P and _PORT.fullmatch(value))
                and value[:1] not in "<[{"
            ):
                found.append(Secret(rule.kind, *match.span(group)))
    for rule, check in ((_BEARER, None), (_BASIC, _basic_credentials)):
        for match in rule.pattern.finditer(text):
            if check is None or check(match.group(1)):
                found.append(Secret(rule.kind, *match.span(1)))
    found.extend(_named_values(text))
    found.sort(key=lambda secret: (secret.start, -(secret.end - secret.start)))
    kept: list[Secret] = []
    for secret in found:
        if kept and secret.start < kept[-1].end:
            continue
        kept.append(secret)
    return kept


def redact(text: str) -> tuple[str, tuple[str, ...]]:
    """`text` with each secret replaced by its marker, and the kinds replaced, in order."""
    secrets = find_secrets(text)
    if not secrets:
        return text, ()
    pieces: list[str] = []
    at = 0
    for secret in secrets:
        pieces += [text[at : secret.start], marker(secret.kind)]
        at = secret.end
    pieces.append(text[at:])
    return "".join(pieces), tuple(secret.kind for secret in secrets)
