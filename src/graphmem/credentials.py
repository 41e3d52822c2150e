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
    "UNSENDABLE",
    "Credential",
    "read_token_file",
    "read_tokens_file",
    "sendable_token",
]

# A token shorter than this is guessable by anyone who can reach the port.
MIN_TOKEN_LENGTH = 16

NEW_TOKEN = "make a random one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."


def _read_private_file(raw_path: str, key: str) -> str:
    """The text of a file holding secrets, refused when anyone but its owner may read it."""
    path = Path(raw_path).expanduser()
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            # Checked before the mode: a folder is usually readable by others, and
            # `chmod 600` advice would send the user the wrong way.
            raise ConfigError(key, raw_path, "It is a folder, not a file; give the path of the file itself.")
        # Refused, not warned about: a token others can read protects nothing, and a
        # warning on a server's stderr is seldom read. ssh refuses a readable key the same way.
        if sys.platform != "win32" and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(
                key,
                raw_path,
                f"Other users can read it (mode {stat.filemode(info.st_mode)}); run `chmod 600 {raw_path}` first.",
            )
        # utf-8-sig: Windows editors start a UTF-8 file with a byte order mark, which
        # would otherwise become part of the first name or token.
        return path.read_text(encoding="utf-8-sig")
    except OSError as error:
        raise ConfigError(key, raw_path, f"It cannot be read ({error.strerror or error}).") from None
    except UnicodeDecodeError:
        raise ConfigError(key, raw_path, "It is not UTF-8 text; write it with a text editor.") from None


def sendable_token(token: str) -> bool:
    """Whether a client can send `token` in an HTTP header, so that it can ever match.

    Only printable ASCII travels in a header unchanged: other characters are encoded
    by the client and read back differently by the server (or refused on the way), so
    a token holding one would answer 401 to every request with no hint why.
    """
    return all(" " <= char <= "~" for char in token)


UNSENDABLE = (
    "holds a character a client cannot send in an HTTP header (a control character or one "
    "outside ASCII), so no request could ever match it; use letters, digits and punctuation "
    "only, or " + NEW_TOKEN
)
"""The end of the sentence refusing a token `sendable_token` rejects."""


def read_token_file(raw_path: str, key: str) -> str:
    """The token of a single token's file: its text without surrounding white space.

    Raises:
        ConfigError: the file is readable by others, unreadable, a folder, empty, or its
            token holds a character a client cannot send.
    """
    token = _read_private_file(raw_path, key).strip()
    if not token:
        raise ConfigError(key, raw_path, "The file is empty; put the token on its first line.")
    if not sendable_token(token):
        raise ConfigError(key, raw_path, f"The token {UNSENDABLE}")
    return token


@dataclass(frozen=True, slots=True)
class Credential:
    """A token the network server accepts, and the identity of whoever presents it."""

    token: str = field(repr=False)
    identity: Identity


ACCESS_WORDS = ("read", "write")
"""The third word of a line of the tokens file."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_PROJECT = re.compile(r"[^,*\s]{1,300}")
"""A project a token may reach (a name or a key, such as github.com/acme/api)."""
_LINE_FORMAT = "NAME TOKEN read|write"
_FIX_ORDER = f"write the line as `{_LINE_FORMAT}`, such as `alice TOKEN write`."


def _shown(word: str, what: str) -> str:
    """`word` quoted for an error message, or `what` when it could be a token.

    A line in the wrong order puts the token where a name or an access word belongs,
    so no word of a refused line is quoted unless it is too short to be a token.
    """
    return repr(word) if len(word) < MIN_TOKEN_LENGTH else what


_TOKEN_LIKE = re.compile(rf"[A-Za-z0-9_-]{{{MIN_TOKEN_LENGTH},}}")


def _looks_like_a_token(word: str) -> bool:
    """Whether `word`, written where a name belongs, is more likely a token (such as one made by
    `secrets.token_urlsafe`): long, of the token alphabet only, mixing upper case, lower case and
    digits. Accepted as a name, it would be shown by `graphmem info` and recorded as an author."""
    return (
        _TOKEN_LIKE.fullmatch(word) is not None
        and any(char.isupper() for char in word)
        and any(char.islower() for char in word)
        and any(char.isdigit() for char in word)
    )


def _line_error(words: list[str]) -> str | None:
    """What is wrong with the words of one line, or None when it is `NAME TOKEN read|write`."""
    if len(words) not in (3, 4):
        return (
            f"expected three words, `{_LINE_FORMAT}` (and a fourth, the projects it may reach), and found "
            f"{len(words)}; write one line per person, such as `alice TOKEN write` or `alice TOKEN write api,docs`."
        )
    name, token, access = words[:3]
    if len(words) == 4 and not all(_PROJECT.fullmatch(project) for project in words[3].split(",")):
        return (
            f"the projects of {_shown(name, 'this line')} (the fourth word) must be names separated by commas, "
            "such as `api,docs`, each without spaces or `*`."
        )
    if access not in ACCESS_WORDS:
        if name in ACCESS_WORDS or token in ACCESS_WORDS:
            return f"`read` or `write` must be the third word; {_FIX_ORDER}"
        return (
            f"the access {_shown(access, 'word (the third)')} is not `read` or `write`; write one of those two words."
        )
    if len(token) < MIN_TOKEN_LENGTH:
        if len(name) >= MIN_TOKEN_LENGTH:
            # Likely `TOKEN alice write`: the first word is not shown, as it may be the token.
            return (
                f"the second word, the token, is shorter than {MIN_TOKEN_LENGTH} characters; if the "
                f"token came first, {_FIX_ORDER} Otherwise {NEW_TOKEN}"
            )
        return f"the token of {name!r} is shorter than {MIN_TOKEN_LENGTH} characters; {NEW_TOKEN}"
    if not sendable_token(token):
        return f"the token of {_shown(name, 'this line')} {UNSENDABLE}"
    if not _NAME.fullmatch(name):
        return (
            f"the name {_shown(name, '(the first word)')} may hold only letters, digits, '.', '_', '-' and '@' "
            "(starting with a letter or digit, at most 64); it is recorded as the author of changes."
        )
    if name == token:
        return f"the name and the token are the same word; {_FIX_ORDER}"
    if _looks_like_a_token(name):
        # `TOKEN alice.smith@example.com write`: both words would pass, and the token would be
        # shown as a name. Not quoted, for the same reason.
        return (
            f"the first word, the name, looks like a token (long, mixing upper case, lower case and digits); "
            f"if the token came first, {_FIX_ORDER} Otherwise choose a shorter name, or one with '.' or '@'."
        )
    return None


def read_tokens_file(raw_path: str, key: str = "--tokens-file") -> tuple[Credential, ...]:
    """The named tokens of a tokens file: one line per person, `NAME TOKEN read|write`.

    Words are separated by spaces or tabs; blank lines and lines starting with `#` are
    skipped, and so is a byte order mark at the start. No error message repeats a token,
    even one written where a name or an access word belongs.

    Raises:
        ConfigError: the file is readable by others, unreadable or a folder, names no
            token, or a line is malformed, repeats a name or a token, or has a token
            that is short or that a client could not send.
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
        problem = _line_error(words)
        if problem is not None:
            raise refuse(line_no, problem)
        name, token, access = words[:3]
        reach = tuple(words[3].split(",")) if len(words) == 4 else None
        if name in tokens or token in names:
            # One line's token is another's name: a line is in the wrong order, and
            # whichever word it is, it is not shown.
            other_line = tokens[name][1] if name in tokens else names[token]
            raise refuse(line_no, f"a word of this line is a name or token on line {other_line}; {_FIX_ORDER}")
        if name in names:
            raise refuse(
                line_no,
                f"the name {_shown(name, '(the first word)')} is already on line {names[name]}; "
                "give each person one line.",
            )
        if token in tokens:
            other, other_line = tokens[token]
            raise refuse(
                line_no,
                f"the token of {name!r} is the same as that of {other!r} on line {other_line}; "
                f"give each person a token of their own, or changes are recorded under the wrong name. {NEW_TOKEN}",
            )
        names[name] = line_no
        tokens[token] = (name, line_no)
        credentials.append(Credential(token, Identity(name, can_write=access == "write", projects=reach)))
    if not credentials:
        raise ConfigError(key, raw_path, f"The file names no token; write one line per person: `{_LINE_FORMAT}`.")
    return tuple(credentials)
