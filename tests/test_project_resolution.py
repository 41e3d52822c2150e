"""Which project a server works in: named, or found from real git repositories and folders made here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from graphmem.core.errors import ConfigError
from graphmem.project_resolution import NoProject, ProjectChoice, normalise_remote_url, resolve_project

# Git run with no user or system configuration, so the machine's settings change nothing here.
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, timeout=30)


def repository(path: Path, *remotes: tuple[str, str], commit: bool = False) -> Path:
    """A new git repository at `path` with these (name, url) remotes, in this order."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for name, url in remotes:
        git(path, "remote", "add", name, url)
    if commit:
        git(path, "commit", "-q", "--allow-empty", "-m", "first")
    return path


def auto(cwd: Path, *, home: Path | None = None, workspace: str | None = None) -> ProjectChoice | NoProject | None:
    """What `--project auto` resolves to in `cwd`; with no `home`, the home directory is elsewhere."""
    return resolve_project(
        "auto", setting_source="--project", workspace=workspace, workspace_source="--workspace", cwd=cwd, home=home
    )


def found(cwd: Path, *, home: Path | None = None, workspace: str | None = None) -> ProjectChoice:
    chosen = auto(cwd, home=home, workspace=workspace)
    assert isinstance(chosen, ProjectChoice), chosen
    return chosen


def named(value: str | None, key: str = "--project") -> ProjectChoice | NoProject | None:
    return resolve_project(
        value, setting_source=key, workspace=None, workspace_source="--workspace", cwd=Path("/"), home=None
    )


# -- off, or a name given -----------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, "", "   "])
def test_without_a_setting_projects_are_off(value: str | None):
    assert named(value) is None


def test_a_name_given_is_the_project_id_and_name_without_its_outer_spaces():
    assert named("  billing service  ", "GRAPHMEM_PROJECT") == ProjectChoice(
        "billing service", "billing service", "GRAPHMEM_PROJECT"
    )


@pytest.mark.parametrize("value", ["*", "shared", "Shared", " SHARED "])
def test_the_reserved_names_are_refused_naming_the_key_and_saying_what_to_do(value: str):
    with pytest.raises(ConfigError) as refused:
        named(value, "GRAPHMEM_PROJECT")
    assert refused.value.key == "GRAPHMEM_PROJECT"
    assert refused.value.value == value.strip()
    assert "reserved" in str(refused.value)
    assert "give another name" in str(refused.value)


def test_a_name_of_100_characters_is_taken_and_one_of_101_refused():
    assert named("n" * 100) == ProjectChoice("n" * 100, "n" * 100, "--project")
    with pytest.raises(ConfigError, match="at most 100 characters"):
        named("n" * 101)


@pytest.mark.parametrize("value", ["api\nbilling", "api\x00", "api\x1b[31m", "api\u2028billing"])
def test_a_name_with_a_control_character_or_a_line_break_is_refused(value: str):
    with pytest.raises(ConfigError, match="control characters"):
        named(value)


@pytest.mark.parametrize("value", ["auto", "AUTO", " Auto "])
def test_auto_is_read_in_any_case(tmp_path: Path, value: str):
    folder = tmp_path / "notes"
    folder.mkdir()
    chosen = resolve_project(
        value, setting_source="--project", workspace=None, workspace_source="--workspace", cwd=folder, home=None
    )
    assert chosen == ProjectChoice(str(folder.resolve()), "notes", f"the folder {folder.resolve()}")


# -- auto: git repositories ---------------------------------------------------------------------


def test_in_a_repository_with_origin_the_project_is_its_remote_from_any_folder_inside(tmp_path: Path):
    root = repository(tmp_path / "api", ("origin", "git@github.com:Acme/API.git"))
    deep = root / "src" / "module"
    deep.mkdir(parents=True)
    chosen = found(deep)
    assert chosen == ProjectChoice("github.com/acme/api", "api", f"the git remote origin of {root.resolve()}")
    assert chosen.label == "api (github.com/acme/api)"


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Acme/API.git",
        "https://user:token@github.com/acme/api.git/",
        "ssh://git@github.com:22/acme/api",
        "https://github.com/Acme/API",
        "HTTPS://GitHub.COM/acme/api.git",
        "ssh://git@github.com/acme/api.git/",
    ],
)
def test_every_spelling_of_one_remote_gives_one_id_across_clones(tmp_path: Path, url: str):
    clone = repository(tmp_path / "some-clone-folder", ("origin", url))
    assert (found(clone).id, found(clone).name) == ("github.com/acme/api", "api")


def test_a_password_or_token_in_the_remote_url_is_nowhere_in_the_project(tmp_path: Path):
    secret = "ghp_s3cretT0ken0123456789"
    root = repository(tmp_path / "api", ("origin", f"https://alice:{secret}@gitlab.example.com/team/api.git"))
    chosen = found(root)
    assert chosen.id == "gitlab.example.com/team/api"
    assert secret not in repr(chosen)
    assert "alice" not in repr(chosen)


def test_a_token_given_as_the_user_is_dropped_too():
    token = "ghp_s3cretT0ken0123456789"
    assert normalise_remote_url(f"https://{token}@github.com/acme/api", relative_to=Path("/")) == "github.com/acme/api"
    assert normalise_remote_url(f"{token}:x-oauth@github.com:acme/api", relative_to=Path("/")) == "github.com/acme/api"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("/srv/git/Tool.git", "/srv/git/Tool"),
        ("file:///srv/git/Tool.git", "/srv/git/Tool"),
        ("/srv/git/Tool/.git", "/srv/git/Tool"),
        ("/srv/git/Tool/", "/srv/git/Tool"),
    ],
)
def test_a_local_remote_is_its_path_without_git_and_keeps_its_case(url: str, expected: str):
    assert normalise_remote_url(url, relative_to=Path("/elsewhere")) == expected


def test_a_relative_local_remote_is_taken_from_the_repository_root(tmp_path: Path):
    root = repository(tmp_path / "work" / "tool", ("origin", "../upstream/tool.git"))
    assert found(root).id == str(tmp_path.resolve() / "work" / "upstream" / "tool")


@pytest.mark.parametrize("url", ["", "https:///acme/api", "https://[::1/acme/api"])
def test_a_url_that_names_no_place_gives_no_id(url: str):
    assert normalise_remote_url(url, relative_to=Path("/")) is None


def test_origin_wins_over_a_remote_listed_before_it(tmp_path: Path):
    root = repository(
        tmp_path / "api", ("upstream", "https://github.com/acme/api-upstream"), ("origin", "https://github.com/me/api")
    )
    chosen = found(root)
    assert chosen.id == "github.com/me/api"
    assert "remote origin" in chosen.source


def test_without_origin_the_first_remote_in_the_config_is_taken(tmp_path: Path):
    root = repository(
        tmp_path / "api", ("upstream", "https://github.com/acme/api"), ("fork", "https://github.com/me/api")
    )
    chosen = found(root)
    assert chosen.id == "github.com/acme/api"
    assert chosen.source == f"the git remote upstream of {root.resolve()}"


def test_a_repository_without_a_remote_is_its_root_folder(tmp_path: Path):
    root = repository(tmp_path / "tool")
    (root / "docs").mkdir()
    assert found(root / "docs") == ProjectChoice(
        str(root.resolve()), "tool", f"the git root {root.resolve()} (no remote)"
    )


def test_a_worktree_is_the_same_project_as_its_repository(tmp_path: Path):
    main = repository(tmp_path / "api", ("origin", "git@github.com:acme/api.git"), commit=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "api-feature"))
    from_worktree = found(tmp_path / "api-feature")
    assert from_worktree.id == found(main).id == "github.com/acme/api"
    assert "worktree" in from_worktree.source


def test_a_worktree_of_a_repository_without_a_remote_is_the_main_checkout(tmp_path: Path):
    main = repository(tmp_path / "tool", commit=True)
    git(main, "worktree", "add", "-q", str(tmp_path / "tool-wip"))
    chosen = found(tmp_path / "tool-wip")
    assert (chosen.id, chosen.name) == (str(main.resolve()), "tool")
    assert (
        chosen.source
        == f"the git root {main.resolve()} (no remote), through the worktree {(tmp_path / 'tool-wip').resolve()}"
    )


def test_inside_a_submodule_the_project_is_the_submodule_and_outside_it_the_superproject(tmp_path: Path):
    library = repository(tmp_path / "library-origin", commit=True)
    app = repository(tmp_path / "app", ("origin", "https://github.com/acme/app.git"), commit=True)
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(library), "vendor/library")
    assert (app / "vendor" / "library" / ".git").is_file()
    assert found(app / "vendor" / "library").id == str(library.resolve())
    assert found(app / "vendor").id == "github.com/acme/app"


# -- auto: git files it cannot read -------------------------------------------------------------


@pytest.mark.parametrize(
    "config",
    [
        '[remote "origin"] # the company remote\n\turl = "git@github.com:Acme/API.git" ; its ssh form\n',
        "[core]\n\tbare = false\n[remote.origin]\n\turl = https://github.com/acme/api\n",
        '[remote "origin"]\n\turl = https://github.com/\\\nacme/api\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n',
    ],
)
def test_a_config_file_is_read_as_git_reads_it(tmp_path: Path, config: str):
    root = repository(tmp_path / "api")
    (root / ".git" / "config").write_text(config, encoding="utf-8")
    assert found(root).id == "github.com/acme/api"


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ('[remote "origin"]\n\turl = https://github.com/acme/api\n this line is not a setting\n', 3),
        ('[remote "origin\n\turl = https://github.com/acme/api\n', 1),
        ("url = https://github.com/acme/api\n", 1),
        (b"\xff\xfe\x00garbage\x00".decode("latin-1"), 1),
    ],
)
def test_a_malformed_config_falls_back_to_the_repository_root_and_names_the_line_as_git_does(
    tmp_path: Path, config: str, line: int
):
    # Git refuses these files too ("bad config line 3"), so no remote in them is trusted.
    root = repository(tmp_path / "api")
    (root / ".git" / "config").write_text(config, encoding="latin-1")
    chosen = found(root)
    assert (chosen.id, chosen.name) == (str(root.resolve()), "api")
    assert chosen.source == f"the git root {root.resolve()} (its git config cannot be read: line {line} is malformed)"


def test_an_unreadable_config_falls_back_to_the_repository_root(tmp_path: Path):
    root = repository(tmp_path / "api")
    (root / ".git" / "config").unlink()
    (root / ".git" / "config").mkdir()  # unreadable even by root
    chosen = found(root)
    assert chosen.id == str(root.resolve())
    assert "its git config cannot be read" in chosen.source


@pytest.mark.parametrize("content", ["not a gitdir line\n", "gitdir: /nowhere/at/all\n", ""])
def test_a_broken_git_file_makes_its_folder_the_root(tmp_path: Path, content: str):
    root = tmp_path / "checkout"
    (root / "src").mkdir(parents=True)
    (root / ".git").write_text(content, encoding="utf-8")
    chosen = found(root / "src")
    assert (chosen.id, chosen.name) == (str(root.resolve()), "checkout")
    assert chosen.source.startswith(f"the git root {root.resolve()} (")


# -- auto: folders, home, the workspace ---------------------------------------------------------


def test_outside_any_repository_the_project_is_the_folder(tmp_path: Path):
    folder = tmp_path / "notes"
    folder.mkdir()
    assert found(folder) == ProjectChoice(str(folder.resolve()), "notes", f"the folder {folder.resolve()}")


def test_the_home_directory_is_no_project_and_says_why(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    chosen = auto(home, home=home)
    assert chosen == NoProject(f"the working directory {home.resolve()} is the home directory")


def test_the_filesystem_root_is_no_project():
    chosen = auto(Path("/"), home=None)
    assert isinstance(chosen, NoProject)
    assert "the filesystem root" in chosen.reason


def test_a_dotfiles_repository_at_home_does_not_swallow_the_folders_under_it(tmp_path: Path):
    home = repository(tmp_path / "home", ("origin", "git@github.com:me/dotfiles.git"))
    notes = home / "notes"
    notes.mkdir()
    assert found(notes, home=home) == ProjectChoice(str(notes.resolve()), "notes", f"the folder {notes.resolve()}")


def test_the_workspace_wins_over_the_working_directory(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    api = repository(tmp_path / "api", ("origin", "https://github.com/acme/api"))
    chosen = found(home, home=home, workspace=str(api))
    assert chosen.id == "github.com/acme/api"
    assert chosen.source == f"the git remote origin of {api.resolve()}, in the workspace given by --workspace"


def test_a_plain_folder_workspace_is_named_as_the_workspace(tmp_path: Path):
    notes = tmp_path / "notes"
    notes.mkdir()
    chosen = found(tmp_path, workspace=str(notes))
    assert chosen == ProjectChoice(
        str(notes.resolve()), "notes", f"the workspace {notes.resolve()} given by --workspace"
    )


def test_a_relative_workspace_is_taken_from_the_working_directory(tmp_path: Path):
    (tmp_path / "notes").mkdir()
    assert found(tmp_path, workspace="notes").name == "notes"


@pytest.mark.parametrize(
    ("workspace", "why"),
    [("${workspaceFolder}", "the client did not expand it"), ("/no/such/folder", "it is not a folder")],
)
def test_a_workspace_that_is_no_folder_is_set_aside_for_the_working_directory(tmp_path: Path, workspace: str, why: str):
    folder = repository(tmp_path / "tool")
    chosen = found(folder, workspace=workspace)
    assert chosen.id == str(folder.resolve())
    assert chosen.source.endswith(f"; --workspace {workspace!r} was set aside: {why}")


def test_an_unexpanded_workspace_with_the_home_directory_as_working_directory_is_no_project(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    chosen = auto(home, home=home, workspace="${workspaceFolder}")
    assert isinstance(chosen, NoProject)
    assert chosen.reason.startswith(f"the working directory {home.resolve()} is the home directory")
    assert "${workspaceFolder}" in chosen.reason


def test_a_folder_name_with_a_line_break_is_shown_on_one_line(tmp_path: Path):
    folder = tmp_path / "odd\nname"
    folder.mkdir()
    chosen = found(folder)
    assert chosen.id == str(folder.resolve())
    assert "\n" not in chosen.name and "\n" not in chosen.source


def test_a_workspace_under_a_tilde_is_under_the_home_directory_given(tmp_path: Path):
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    assert found(tmp_path, home=home, workspace="~/notes").id == str((home / "notes").resolve())
