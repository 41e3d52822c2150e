"""The tokens of the network server: a single token's file, and the named tokens file of a team.

Both are secrets, so a file anyone but its owner can read is refused outright, as ssh refuses a
readable key, and no error message ever repeats a token. Reading the environment stays in
config.py; this module only reads the files it is given.
"""

from __future__ import annotations

import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from graphmem.core.errors import ConfigError
from graphmem.core.identity import Identity

__all__ = [
    "ACCESS_WORDS",
    "MIN_TOKEN_LENGTH",
    "NEW_TOKEN",
    "Credential",
    "read_token_file",
    "read_tokens_file",
]

# A token shorter than this is guessable by anyone who can reach the port.
MIN_TOKEN_LENGTH = 16

NEW_TOKEN = "make a random one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."


def _read_private_file(raw_path: str, key: str) -> str:
    """The text of a file holding secrets, refused when anyone but its owner may read it."""
    path = Path(raw_path).expanduser()
    try:
        info = path.stat()
        # Refused, not warned about: a token others can read protects nothing, and a
        # warning on a server's stderr is seldom read. ssh refuses a readable key the same way.
        if sys.platform != "win32" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                key,
                raw_path,
                f"Other users can read it (mode {stat.filemode(info.st_mode)}); run `chmod 600 {raw_path}` first.",
            )
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(key, raw_path, f"It cannot be read ({error.strerror or error}).") from None
    except UnicodeDecodeError:
        raise ConfigError(key, raw_path, "It is not UTF-8 text; write it with a text editor.") from None


def read_token_file(raw_path: str, key: str) -> str:
    token = _read_private_file(raw_path, key).strip()
    if not token:
        raise ConfigError(key, raw_path, "The file is empty; put the token on its first line.")
    return token


@dataclass(frozen=True, slots=True)
class Credential:
    """A token the network server accepts, and the identity of whoever presents it."""

    token: str = field(repr=False)
    identity: Identity


ACCESS_WORDS = ("read", "write")
"""The third word of a line of the tokens file."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_LINE_FORMAT = "NAME TOKEN read|write"


def read_tokens_file(raw_path: str, key: str = "--tokens-file") -> tuple[Credential, ...]:
    """The named tokens of a tokens file: one line per person, `NAME TOKEN read|write`.

    Words are separated by spaces or tabs; blank lines and lines starting with `#` are
    skipped. Nothing in an error message repeats a token.

    Raises:
        ConfigError: the file is readable by others or unreadable, names no token, or a
            line is malformed, repeats a name or a token, or has a short token.
    """
    text = _read_private_file(raw_path, key)
    credentials: list[Credential] = []
    names: dict[str, int] = {}
    tokens: dict[str, tuple[str, int]] = {}

    def refuse(line_no: int, reason: str) -> ConfigError:
        return ConfigError(key, raw_path, f"Line {line_no}: {reason}")

    for line_no, line in enumerate(text.splitlines(), start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if len(words) != 3:
            raise refuse(
                line_no,
                f"expected three words, `{_LINE_FORMAT}`, and found {len(words)}; "
                "write one line per person, such as `alice TOKEN write`.",
            )
        name, token, access = words
        if not _NAME.fullmatch(name):
            raise refuse(
                line_no,
                f"the name {name!r} may hold only letters, digits, '.', '_', '-' and '@' "
                "(starting with a letter or digit, at most 64); it is recorded as the author of changes.",
            )
        if name in names:
            raise refuse(line_no, f"the name {name!r} is already on line {names[name]}; give each person one line.")
        if access not in ACCESS_WORDS:
            raise refuse(line_no, f"the access {access!r} is not `read` or `write`; write one of those two words.")
        if len(token) < MIN_TOKEN_LENGTH:
            raise refuse(line_no, f"the token of {name!r} is shorter than {MIN_TOKEN_LENGTH} characters; {NEW_TOKEN}")
        if token in tokens:
            other, other_line = tokens[token]
            raise refuse(
                line_no,
                f"the token of {name!r} is the same as that of {other!r} on line {other_line}; "
                f"give each person a token of their own, or changes are recorded under the wrong name. {NEW_TOKEN}",
            )
        names[name] = line_no
        tokens[token] = (name, line_no)
        credentials.append(Credential(token, Identity(name, can_write=access == "write")))
    if not credentials:
        raise ConfigError(key, raw_path, f"The file names no token; write one line per person: `{_LINE_FORMAT}`.")
    return tuple(credentials)
