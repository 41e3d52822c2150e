"""Settings: where the memory lives and how flags and the environment combine."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from graphmem.config import (
    DEFAULT_HTTP_PORT,
    Identity,
    NetworkSettings,
    ProjectChoice,
    Settings,
    default_memory_path,
)
from graphmem.core.errors import ConfigError


def test_with_nothing_set_the_memory_is_in_the_user_data_directory(tmp_path: Path):
    settings = Settings.from_env({}, cwd=tmp_path)
    assert settings.memory_path == default_memory_path()
    assert settings.memory_path.is_absolute()
    assert "graphmem" in settings.memory_path.parts
    assert "site-packages" not in settings.memory_path.parts
    assert settings.backend == "sqlite"


def test_a_relative_memory_file_path_resolves_against_the_working_directory(tmp_path: Path):
    settings = Settings.from_env({"MEMORY_FILE_PATH": "data/memory.jsonl"}, cwd=tmp_path)
    assert settings.memory_path == tmp_path / "data" / "memory.jsonl"


def test_an_absolute_memory_file_path_is_used_as_is(tmp_path: Path):
    target = tmp_path / "elsewhere" / "m.db"
    assert Settings.from_env({"MEMORY_FILE_PATH": str(target)}).memory_path == target


def test_the_flag_wins_over_the_environment(tmp_path: Path):
    settings = Settings.from_env({"MEMORY_FILE_PATH": "env.db"}, memory_file="flag.db", cwd=tmp_path)
    assert settings.memory_path == tmp_path / "flag.db"


def test_a_tilde_expands_to_the_home_directory():
    assert Settings.from_env({"MEMORY_FILE_PATH": "~/m.db"}).memory_path == Path.home() / "m.db"


@pytest.mark.parametrize(
    ("name", "backend"),
    [
        ("memory.jsonl", "jsonl"),
        ("memory.json", "jsonl"),
        ("MEMORY.JSONL", "jsonl"),
        ("memory.db", "sqlite"),
        ("memory.sqlite", "sqlite"),
        ("memory", "sqlite"),
    ],
)
def test_the_suffix_chooses_the_backend(tmp_path: Path, name: str, backend: str):
    assert Settings.from_env({"MEMORY_FILE_PATH": name}, cwd=tmp_path).backend == backend


def test_a_directory_is_refused_with_the_key_and_value(tmp_path: Path):
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"MEMORY_FILE_PATH": str(tmp_path)})
    assert "MEMORY_FILE_PATH" in str(raised.value)
    assert str(tmp_path) in str(raised.value)


def test_strict_is_read_from_the_environment():
    assert Settings.from_env({"GRAPHMEM_STRICT": "true"}).strict is True
    assert Settings.from_env({"GRAPHMEM_STRICT": "0"}).strict is False


def test_an_unreadable_bool_names_the_key_and_the_value():
    with pytest.raises(ConfigError, match="GRAPHMEM_STRICT") as raised:
        Settings.from_env({"GRAPHMEM_STRICT": "maybe"})
    assert "maybe" in str(raised.value)


# -- serving over the network --------------------------------------------------------

TOKEN = "s3cret-token-0123456789"


def test_network_defaults_are_loopback_without_a_token():
    network = NetworkSettings.from_env({})
    assert (network.host, network.port, network.token) == ("127.0.0.1", DEFAULT_HTTP_PORT, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "memory.example"])
def test_a_host_other_machines_can_reach_is_refused_without_a_token(host: str):
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, host=host)
    assert caught.value.key == "--host"
    assert "token" in str(caught.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_hosts_need_no_token(host: str):
    assert NetworkSettings.from_env({}, host=host).host == host


def test_a_token_from_the_environment_allows_any_host_and_is_never_shown():
    network = NetworkSettings.from_env({"GRAPHMEM_TOKEN": TOKEN}, host="0.0.0.0")
    assert network.token == TOKEN
    assert TOKEN not in repr(network)


def test_a_short_token_is_refused_without_echoing_it():
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({"GRAPHMEM_TOKEN": "short"})
    assert "short" not in str(caught.value).replace("shorter", "")


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    token_file.chmod(0o644)
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, token_file=str(token_file))
    assert "chmod 600" in str(caught.value)
    token_file.chmod(0o600)
    assert NetworkSettings.from_env({}, token_file=str(token_file)).token == TOKEN


def test_the_token_file_flag_wins_over_the_environment(tmp_path: Path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN, encoding="utf-8")
    token_file.chmod(0o600)
    env = {"GRAPHMEM_TOKEN": "another-token-0123456789"}
    assert NetworkSettings.from_env(env, token_file=str(token_file)).token == TOKEN


def test_allowed_hosts_and_origins_come_from_comma_separated_variables():
    network = NetworkSettings.from_env(
        {"GRAPHMEM_ALLOWED_HOSTS": "a.example, b.example", "GRAPHMEM_ALLOWED_ORIGINS": "https://app.example"}
    )
    assert network.allowed_hosts == ("a.example", "b.example")
    assert network.allowed_origins == ("https://app.example",)


def test_the_search_budget_defaults_to_10000_tokens_and_reads_its_variable_and_flag(tmp_path):
    assert Settings.from_env({}, cwd=tmp_path).search_budget == 10_000
    assert Settings.from_env({"GRAPHMEM_SEARCH_BUDGET": "0"}, cwd=tmp_path).search_budget == 0
    assert Settings.from_env({"GRAPHMEM_SEARCH_BUDGET": "5000"}, search_budget=2000, cwd=tmp_path).search_budget == 2000


@pytest.mark.parametrize("value", ["-1", "lots"])
def test_a_bad_search_budget_names_the_variable(tmp_path, value):
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({"GRAPHMEM_SEARCH_BUDGET": value}, cwd=tmp_path)
    assert raised.value.key == "GRAPHMEM_SEARCH_BUDGET"


# -- named tokens for a team (issue 18, item 4) --------------------------------------

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
CI = "ci-token-0123456789abcdef"


def tokens_file(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return str(path)


def test_a_tokens_file_gives_each_token_its_name_and_access_and_shows_no_token(tmp_path: Path):
    text = f"# the team\n\nalice {ALICE} write\n  bob\t{BOB}   write\nci {CI} read\n"
    network = NetworkSettings.from_env({}, host="0.0.0.0", tokens_file=tokens_file(tmp_path, text))
    assert [(c.identity.name, c.identity.access, c.token) for c in network.credentials] == [
        ("alice", "write", ALICE),
        ("bob", "write", BOB),
        ("ci", "read", CI),
    ]
    assert network.token is None
    assert all(token not in repr(network) for token in (ALICE, BOB, CI))


def test_the_tokens_file_comes_from_its_variable_too(tmp_path: Path):
    network = NetworkSettings.from_env({"GRAPHMEM_TOKENS_FILE": tokens_file(tmp_path, f"ci {CI} read\n")})
    assert [c.identity for c in network.credentials] == [Identity("ci", can_write=False)]


def test_the_single_token_is_a_write_token_with_no_name():
    network = NetworkSettings.from_env({"GRAPHMEM_TOKEN": TOKEN})
    assert [(c.identity, c.token) for c in network.credentials] == [(Identity(None, can_write=True), TOKEN)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            f"alice {ALICE}\n",
            "Line 1: expected three words, `NAME TOKEN read|write` (and a fourth, the projects it may reach), "
            "and found 2",
        ),
        (f"alice {ALICE} write\nalice {BOB} read\n", "Line 2: the name 'alice' is already on line 1"),
        (
            f"alice {ALICE} write\n# bob\nbob {ALICE} write\n",
            "Line 3: the token of 'bob' is the same as that of 'alice' on line 1",
        ),
        ("alice short-token write\n", "Line 1: the token of 'alice' is shorter than 16 characters"),
        (f"alice {ALICE} admin\n", "Line 1: the access 'admin' is not `read` or `write`"),
        (f"al/ice {ALICE} write\n", "Line 1: the name 'al/ice' may hold only letters, digits"),
        ("# nobody yet\n\n", "The file names no token; write one line per person: `NAME TOKEN read|write`"),
    ],
    ids=["words", "duplicate-name", "duplicate-token", "short-token", "access", "name", "empty"],
)
def test_a_wrong_tokens_file_is_refused_saying_which_line_and_how_to_fix_it(tmp_path: Path, text: str, expected: str):
    path = tokens_file(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=path)
    message = str(caught.value)
    assert caught.value.key == "--tokens-file"
    assert expected in message
    assert ALICE not in message and "short-token" not in message


@pytest.mark.parametrize(
    "line",
    [
        f"alice write {ALICE}",
        f"{ALICE} alice write",
        f"{ALICE} write alice",
        f"write {ALICE} alice",
        f"write alice {ALICE}",
        f"alice {ALICE} {BOB}",
        f"{ALICE} {ALICE} write",
    ],
)
def test_a_tokens_file_line_in_the_wrong_order_is_refused_without_showing_the_token(tmp_path: Path, line: str):
    # Issue 27, item 14.
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=tokens_file(tmp_path, f"bob {BOB} read\n{line}\n"))
    message = str(caught.value)
    assert "Line 2:" in message
    assert ALICE not in message and BOB not in message


def test_a_token_written_before_a_long_name_is_refused_without_showing_it(tmp_path: Path):
    # `TOKEN alice.smith@example.com write`: the name is long enough to pass as a token, and the
    # token is a valid name; accepted, the token would be shown by `graphmem info` as an author.
    token = secrets.token_urlsafe(32)
    while not (any(c.isupper() for c in token) and any(c.islower() for c in token) and any(c.isdigit() for c in token)):
        token = secrets.token_urlsafe(32)
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=tokens_file(tmp_path, f"{token} alice.smith@example.com write\n"))
    assert "Line 1:" in str(caught.value) and "looks like a token" in str(caught.value)
    assert token not in str(caught.value)


def test_a_name_repeated_on_two_lines_is_refused_without_quoting_a_word_that_could_be_a_token(tmp_path: Path):
    long_name = "a-rather-long-service-name"
    text = f"{long_name} {ALICE} write\n{long_name} {BOB} read\n"
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=tokens_file(tmp_path, text))
    assert "Line 2:" in str(caught.value) and "already on line 1" in str(caught.value)
    assert long_name not in str(caught.value)


def test_a_tokens_file_whose_token_is_another_line_s_name_is_refused_without_showing_it(tmp_path: Path):
    text = f"alice {ALICE} write\n{ALICE} {BOB} read\n"
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=tokens_file(tmp_path, text))
    assert "Line 2:" in str(caught.value)
    assert ALICE not in str(caught.value) and BOB not in str(caught.value)


@pytest.mark.parametrize(
    "token",
    ["alice-tökén-0123456789abcdef", "alice-token\x00-0123456789abcdef", "alice-token\x07-0123456789abcdef"],
    ids=["non-ascii", "nul", "control"],
)
def test_a_tokens_file_token_no_client_can_send_is_refused_naming_the_line_not_the_token(tmp_path: Path, token: str):
    # Issue 27, item 15: such a token answers 401 to everyone.
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=tokens_file(tmp_path, f"bob {BOB} read\nalice {token} write\n"))
    message = str(caught.value)
    assert "Line 2: the token of 'alice' holds a character a client cannot send" in message
    assert token not in message


@pytest.mark.parametrize("token", ["s3cret-tökén-0123456789", "s3cret-token\x01-0123456789"])
def test_a_single_token_no_client_can_send_is_refused_without_showing_it(tmp_path: Path, token: str):
    path = tmp_path / "token"
    path.write_text(token, encoding="utf-8")
    path.chmod(0o600)
    for env, flag in (({"GRAPHMEM_TOKEN": token}, None), ({}, str(path))):
        with pytest.raises(ConfigError) as caught:
            NetworkSettings.from_env(env, token_file=flag)
        assert "holds a character a client cannot send" in str(caught.value)
        assert token not in str(caught.value)


def test_a_tokens_file_that_is_a_folder_is_refused_saying_so(tmp_path: Path):
    folder = tmp_path / "tokens"
    folder.mkdir(mode=0o755)
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({}, tokens_file=str(folder))
    assert "It is a folder, not a file" in str(caught.value)
    assert "chmod" not in str(caught.value)


def test_a_tokens_file_starting_with_a_byte_order_mark_is_read_as_if_it_had_none(tmp_path: Path):
    path = tmp_path / "tokens"
    path.write_bytes(f"\ufeffalice {ALICE} write\n".encode())
    path.chmod(0o600)
    network = NetworkSettings.from_env({}, tokens_file=str(path))
    assert [c.identity for c in network.credentials] == [Identity("alice", can_write=True)]


def test_a_tokens_file_readable_by_others_is_refused(tmp_path: Path):
    path = tokens_file(tmp_path, f"alice {ALICE} write\n", mode=0o640)
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env({"GRAPHMEM_TOKENS_FILE": path})
    assert caught.value.key == "GRAPHMEM_TOKENS_FILE"
    assert f"chmod 600 {path}" in str(caught.value)


@pytest.mark.parametrize("single", ["GRAPHMEM_TOKEN", "GRAPHMEM_TOKEN_FILE"])
def test_a_tokens_file_and_a_single_token_together_are_refused(tmp_path: Path, single: str):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN, encoding="utf-8")
    token_file.chmod(0o600)
    env = {single: TOKEN if single == "GRAPHMEM_TOKEN" else str(token_file)}
    with pytest.raises(ConfigError) as caught:
        NetworkSettings.from_env(env, tokens_file=tokens_file(tmp_path, f"alice {ALICE} write\n"))
    assert f"{single} gives a single token too; use one or the other" in str(caught.value)
    assert "`default TOKEN write`" in str(caught.value)


# -- the project a server works in --------------------------------------------------------------


def test_without_a_project_setting_projects_are_off_and_no_folder_is_looked_at(tmp_path: Path):
    settings = Settings.from_env({}, cwd=tmp_path / "does-not-exist", home=tmp_path)
    assert (settings.project, settings.why_no_project) == (None, None)


def test_the_project_comes_from_its_variable():
    settings = Settings.from_env({"GRAPHMEM_PROJECT": " billing "})
    assert settings.project == ProjectChoice("billing", "billing", "GRAPHMEM_PROJECT")


def test_the_project_flag_wins_over_the_variable():
    settings = Settings.from_env({"GRAPHMEM_PROJECT": "billing"}, project="api")
    assert settings.project == ProjectChoice("api", "api", "--project")


def test_an_empty_project_flag_turns_projects_off_whatever_the_variable_says(tmp_path: Path):
    settings = Settings.from_env({"GRAPHMEM_PROJECT": "auto"}, project="", cwd=tmp_path, home=tmp_path)
    assert (settings.project, settings.why_no_project) == (None, None)


@pytest.mark.parametrize(("flag", "key"), [(None, "GRAPHMEM_PROJECT"), ("shared", "--project")])
def test_a_reserved_project_name_is_refused_naming_where_it_came_from(flag: str | None, key: str):
    with pytest.raises(ConfigError) as refused:
        Settings.from_env({"GRAPHMEM_PROJECT": "shared"}, project=flag)
    assert refused.value.key == key
    assert "'shared' is reserved" in str(refused.value)


def test_auto_takes_the_workspace_variable_and_the_workspace_flag_wins_over_it(tmp_path: Path):
    (tmp_path / "from-env").mkdir()
    (tmp_path / "from-flag").mkdir()
    env = {"GRAPHMEM_PROJECT": "auto", "GRAPHMEM_WORKSPACE": str(tmp_path / "from-env")}
    by_env = Settings.from_env(env, cwd=tmp_path, home=tmp_path / "home")
    by_flag = Settings.from_env(env, workspace=str(tmp_path / "from-flag"), cwd=tmp_path, home=tmp_path / "home")
    assert by_env.project is not None and by_env.project.name == "from-env"
    assert by_env.project.source.endswith("given by GRAPHMEM_WORKSPACE")
    assert by_flag.project is not None and by_flag.project.name == "from-flag"
    assert by_flag.project.source.endswith("given by --workspace")


def test_a_workspace_alone_does_not_turn_projects_on(tmp_path: Path):
    settings = Settings.from_env({"GRAPHMEM_WORKSPACE": str(tmp_path)}, cwd=tmp_path)
    assert (settings.project, settings.why_no_project) == (None, None)


def test_auto_in_the_home_directory_leaves_the_whole_memory_and_says_why(tmp_path: Path):
    settings = Settings.from_env({"GRAPHMEM_PROJECT": "auto"}, cwd=tmp_path, home=tmp_path)
    assert settings.project is None
    assert settings.why_no_project == f"the working directory {tmp_path.resolve()} is the home directory"
