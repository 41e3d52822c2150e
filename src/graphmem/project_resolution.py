"""Which project a server works in: decided once at start, from its settings and the folder it runs in.

`--project NAME` names the project. `--project auto` finds it from the workspace a client
names (or else the working directory), in this order:

    the git remote of the repository there   id github.com/acme/api, name api
    the repository's root, with no remote     id /home/a/tool, name tool
    the folder itself, outside any repository  id /home/a/notes, name notes
    the home directory or the filesystem root  no project: the whole memory

Git's own files are read directly, never through a `git` process: resolving costs a few
file reads at start, nothing a person could measure.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from graphmem.core.errors import ConfigError

__all__ = ["AUTO", "MAX_PROJECT_NAME_LENGTH", "NoProject", "ProjectChoice", "normalise_remote_url", "resolve_project"]

AUTO = "auto"
"""The setting that finds the project from the workspace or the working directory."""

MAX_PROJECT_NAME_LENGTH = 100

# Names the reads give a meaning of their own, so no project may take them.
_RESERVED = {
    "*": "it means every project when reading",
    "shared": "it names the space every project shares",
}


@dataclass(frozen=True, slots=True)
class ProjectChoice:
    """The project a server works in.

    Attributes:
        id: what the project is known by: the normalised git remote (`github.com/acme/api`),
            the same on every clone and machine; else a folder's absolute path; else the name given.
        name: short and readable, shown to people and models (`api`).
        source: how it was resolved, for people (`the git remote origin of /home/a/api`).
    """

    id: str
    name: str
    source: str

    @property
    def label(self) -> str:
        """The name with the id after it, `api (github.com/acme/api)`, or the name alone when they are one."""
        return self.name if self.id == self.name else f"{self.name} ({self.id})"


@dataclass(frozen=True, slots=True)
class NoProject:
    """`--project auto` found no project where it looked: the server works in the whole memory.

    Attributes:
        reason: why, for people (`the working directory /home/a is the home directory`).
    """

    reason: str


def resolve_project(
    setting: str | None,
    *,
    setting_source: str,
    workspace: str | None,
    workspace_source: str,
    cwd: Path,
    home: Path | None,
) -> ProjectChoice | NoProject | None:
    """The project a server works in, as its settings and its folder say.

    Args:
        setting: the value of `--project` or GRAPHMEM_PROJECT: None or blank (projects are
            off), `auto`, or a project's name.
        setting_source: where `setting` came from (`--project`), named in errors and sources.
        workspace: the folder a client names (`--workspace ${workspaceFolder}`); only `auto`
            reads it, and it sets aside one the client left unexpanded or that is no folder.
        workspace_source: where `workspace` came from (`--workspace`, GRAPHMEM_WORKSPACE).
        cwd: the working directory: where `auto` looks without a workspace, and what a
            relative workspace is relative to.
        home: the user's home directory, which `auto` never takes for a project; None when unknown.

    Returns:
        None when projects are off; the project; or, when `auto` found none, why.

    Raises:
        ConfigError: a project name that is too long, holds a control character or is reserved.
    """
    if setting is None or not setting.strip():
        return None
    value = setting.strip()
    if value.lower() != AUTO:
        return _named(value, setting_source)
    return _found(
        _starting_folder(workspace, workspace_source, cwd, home), home=None if home is None else _resolved(home)
    )


def _named(name: str, key: str) -> ProjectChoice:
    """The project a setting names, once the name is known to be usable."""
    if len(name) > MAX_PROJECT_NAME_LENGTH:
        raise ConfigError(
            key, name, f"A project name has at most {MAX_PROJECT_NAME_LENGTH} characters; give a shorter one."
        )
    if any(_unprintable(char) for char in name):
        raise ConfigError(key, name, "A project name cannot hold control characters or line breaks; give a plain name.")
    why_reserved = _RESERVED.get(name.casefold())
    if why_reserved is not None:
        # Refused in any case: `Shared` would read as the shared space to everyone who sees it.
        raise ConfigError(
            key,
            name,
            f"{name!r} is reserved ({why_reserved}); give another name, or `auto` to take it from the git "
            "repository or folder you work in.",
        )
    return ProjectChoice(id=name, name=name, source=key)


def _unprintable(char: str) -> bool:
    # Line and paragraph separators as well as C0/C1 controls: each would break a ready line or a log in two.
    return unicodedata.category(char) in ("Cc", "Zl", "Zp")


def _shown(text: str) -> str:
    """`text` (a folder's name, a path) with any control character replaced, fit to print on one line."""
    return "".join("\ufffd" if _unprintable(char) else char for char in text)


@dataclass(frozen=True, slots=True)
class _Start:
    """The folder `auto` starts from, and how to speak of it."""

    folder: Path
    workspace_source: str | None  # None: the working directory
    set_aside: str  # why a workspace given was not used, or ""

    def where(self) -> str:
        """The folder, for people: `the working directory /x` or `the workspace /x given by --workspace`."""
        if self.workspace_source is None:
            return f"the working directory {_shown(str(self.folder))}"
        return f"the workspace {_shown(str(self.folder))} given by {self.workspace_source}"


def _starting_folder(workspace: str | None, workspace_source: str, cwd: Path, home: Path | None) -> _Start:
    """Where `auto` looks: the workspace when it is a folder, else the working directory."""
    given = (workspace or "").strip()
    set_aside = ""
    if given:
        if "${" in given:
            # A client that does not expand its variables passes `${workspaceFolder}` as it is.
            set_aside = f"{workspace_source} {given!r} was set aside: the client did not expand it"
        else:
            folder = cwd / _expand_home(given, home)
            if _is_dir(folder):
                return _Start(_resolved(folder), workspace_source, "")
            set_aside = f"{workspace_source} {given!r} was set aside: it is not a folder"
    return _Start(_resolved(cwd), None, _shown(set_aside))


def _expand_home(path: str, home: Path | None) -> Path:
    """`path` with a leading `~` taken as the home directory given (not read from the environment here)."""
    if home is not None and (path == "~" or path.startswith(("~/", "~" + os.sep))):
        return home / path[2:]
    return Path(path)


def _found(start: _Start, *, home: Path | None) -> ProjectChoice | NoProject:
    """The project `auto` finds from `start`."""
    folder = start.folder
    note = f"; {start.set_aside}" if start.set_aside else ""
    if folder == home or folder == folder.parent:
        # Cursor starts its servers in the home directory: a project there would hold all of
        # someone's work under one name, which is what the whole memory already is.
        what = "the home directory" if folder == home else "the filesystem root"
        return NoProject(f"{start.where()} is {what}{note}")
    in_workspace = "" if start.workspace_source is None else f", in the workspace given by {start.workspace_source}"
    repository = _repository_around(folder, home)
    if repository is None:
        source = f"the folder {_shown(str(folder))}" if start.workspace_source is None else start.where()
        return ProjectChoice(id=str(folder), name=_shown(folder.name), source=source + note)
    root = repository.main_root
    through = "" if repository.root == root else f", through the worktree {_shown(str(repository.root))}"
    remote = _remote(repository.config)
    if isinstance(remote, _Remote):
        remote_id = normalise_remote_url(remote.url, relative_to=root)
        if remote_id is not None:
            return ProjectChoice(
                id=remote_id,
                name=_shown(_last_part(remote_id)),
                source=f"the git remote {_shown(remote.name)} of {_shown(str(root))}{through}{in_workspace}{note}",
            )
        remote = f"the URL of its remote {_shown(remote.name)} cannot be read"
    return ProjectChoice(
        id=str(root),
        name=_shown(root.name),
        source=f"the git root {_shown(str(root))} ({remote}){through}{in_workspace}{note}",
    )


# -- the repository around a folder ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Repository:
    """A git repository a folder is in.

    Attributes:
        root: the working tree the folder is in (a worktree's or submodule's own).
        main_root: the repository's main working tree, the same from each of its worktrees.
        config: the repository's config file, shared by its worktrees; None when the `.git`
            file does not say where the repository is.
    """

    root: Path
    main_root: Path
    config: Path | None


def _repository_around(folder: Path, home: Path | None) -> _Repository | None:
    """The innermost repository holding `folder`, below the home directory and the filesystem root."""
    for candidate in (folder, *folder.parents):
        if candidate == home or candidate == candidate.parent:
            # A repository at home keeps dotfiles, not a project: a folder under it is its own project.
            return None
        marker = candidate / ".git"
        try:
            mode = os.stat(marker).st_mode
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(mode):
            return _Repository(candidate, candidate, marker / "config")
        if stat.S_ISREG(mode):
            return _linked_repository(candidate, marker)
    return None


def _linked_repository(root: Path, marker: Path) -> _Repository:
    """The repository a `.git` file points to (`gitdir: ...`): a worktree's, or a submodule's."""
    try:
        first_line = marker.read_text(encoding="utf-8", errors="replace").partition("\n")[0]
    except OSError:
        return _Repository(root, root, None)
    if not first_line.startswith("gitdir:"):
        return _Repository(root, root, None)
    git_dir = _resolved(root / first_line.removeprefix("gitdir:").strip())
    try:
        # Only a worktree's git folder has a `commondir`: the shared one, where the config lives.
        common = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return _Repository(root, root, git_dir / "config")
    common_dir = _resolved(git_dir / common)
    # The main working tree holds the shared `.git` folder; a bare repository is its own.
    main_root = common_dir.parent if common_dir.name == ".git" else common_dir
    return _Repository(root, main_root, common_dir / "config")


# -- its remote --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Remote:
    name: str
    url: str


def _remote(config: Path | None) -> _Remote | str:
    """The remote `origin`, else the first remote in `config`; or what there is instead, for people."""
    if config is None:
        return "its .git file does not say where the repository is"
    try:
        text = config.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        return f"its git config cannot be read: {error.strerror or error}"
    try:
        remotes = _remote_urls(text)
    except _MalformedConfigError as error:
        # Git itself refuses to run on such a file, so no remote in it is to be trusted.
        return f"its git config cannot be read: line {error.line_no} is malformed"
    if not remotes:
        return "no remote"
    name = "origin" if "origin" in remotes else next(iter(remotes))
    return _Remote(name, remotes[name])


class _MalformedConfigError(Exception):
    def __init__(self, line_no: int) -> None:
        super().__init__(line_no)
        self.line_no = line_no


# `[remote "origin"]`, or the old `[remote.origin]`; anything after the `]` is a first key.
_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\](.*)$')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$")
_BLANK = re.compile(r"\s*(?:[#;].*)?$")


def _remote_urls(text: str) -> dict[str, str]:
    """Each remote's first `url` in a git config file, in the order of the file.

    Raises:
        _MalformedConfigError: a line git would refuse too.
    """
    urls: dict[str, str] = {}
    section, subsection = "", ""
    lines = text.splitlines()
    line_no = 0
    while line_no < len(lines):
        line = lines[line_no]
        line_no += 1
        header = _SECTION.match(line)
        if header is not None:
            section, subsection, line = header[1].lower(), header[2], header[3]
            if subsection is None:
                # `[remote.origin]`: the old spelling, whose subsection git lower-cases.
                section, _, subsection = section.partition(".")
            else:
                subsection = re.sub(r"\\(.)", r"\1", subsection)
        if _BLANK.match(line):
            continue
        entry = _KEY.match(line)
        if entry is None or not section:
            raise _MalformedConfigError(line_no)
        raw = entry[2] or ""
        # A value ending in a backslash goes on over the next line.
        while raw.endswith("\\") and not raw.endswith("\\\\") and line_no < len(lines):
            raw = raw[:-1] + lines[line_no]
            line_no += 1
        if section == "remote" and entry[1].lower() == "url" and subsection and subsection not in urls:
            urls[subsection] = _value(raw)
    return urls


def _value(raw: str) -> str:
    """A config value as git reads it: quotes and escapes undone, a comment and outer spaces dropped."""
    out: list[str] = []
    spaces = ""  # kept only if something follows them
    quoted = False
    escapes = {"n": "\n", "t": "\t", "b": "\b"}
    index = 0
    while index < len(raw):
        char = raw[index]
        index += 1
        if char == "\\" and index < len(raw):
            out.append(spaces + escapes.get(raw[index], raw[index]))
            spaces, index = "", index + 1
        elif char == '"':
            quoted = not quoted
        elif not quoted and char in "#;":
            break
        elif not quoted and char.isspace():
            spaces += char if out else ""
        else:
            out.append(spaces + char)
            spaces = ""
    return "".join(out)


# -- one id for every spelling of a remote ------------------------------------------------------

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HELPER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")  # `persistent-https::https://...`
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
# `[user@]host:path`, git's scp-like form: a colon before any slash. A `user:password@` is taken
# as the user part, so that the password is dropped with it.
_SCP_LIKE = re.compile(r"^(?:[^/]*@)?([^@/:]+):(.*)$")


def normalise_remote_url(url: str, *, relative_to: Path) -> str | None:
    """One id for every way of writing a git remote, with no user, password or token from it.

    `git@github.com:Acme/API.git`, `https://user:token@github.com/acme/api.git/`,
    `ssh://git@github.com:22/acme/api` and `https://github.com/Acme/API` all give
    `github.com/acme/api`: the host and path lower-cased, without scheme, user, password,
    port, `.git` suffix or trailing slash. A local remote (`/srv/git/x.git`,
    `file:///srv/git/x.git`, `../x`) gives its absolute path without `.git`, its case kept.

    Args:
        url: the remote's URL as the git config spells it.
        relative_to: what a relative local path is relative to (the repository's root).

    Returns:
        The id, or None when `url` names no place (empty, or no host where one belongs).
    """
    url = _HELPER.sub("", url.strip())
    if not url:
        return None
    is_file_url = url.lower().startswith("file://")
    if _SCHEME.match(url) and not is_file_url:
        try:
            parts = urlsplit(url)
            host = parts.hostname  # without user, password and port
        except ValueError:  # an unclosed IPv6 bracket, say
            return None
        if not host:
            return None
        return _on_host(host, unquote(parts.path))
    scp = None if is_file_url or _DRIVE.match(url) else _SCP_LIKE.match(url)
    if scp is not None:
        return _on_host(scp[1], scp[2])
    local = unquote(urlsplit(url).path) if is_file_url else url
    if not local:
        return None
    # Paths keep their case: on most systems /srv/X and /srv/x are two repositories.
    path = os.path.normpath(relative_to / local)
    return path.removesuffix(".git").rstrip("/\\") or path


def _on_host(host: str, path: str) -> str:
    """`host/path`, lower-cased (hosts ignore case, and so do GitHub's and GitLab's paths), without `.git`."""
    path = path.lower().strip("/").removesuffix(".git").rstrip("/")
    return f"{host.lower()}/{path}".rstrip("/")


def _last_part(remote_id: str) -> str:
    return re.split(r"[/\\]", remote_id.rstrip("/\\"))[-1] or remote_id


# -- the filesystem ----------------------------------------------------------------------------


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: not a folder either way
        return False


def _resolved(path: Path) -> Path:
    """`path` absolute, with `..` and symbolic links resolved, so one folder has one id."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symbolic link loop
        return Path(os.path.abspath(path))
