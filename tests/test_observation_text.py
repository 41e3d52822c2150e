"""The prefixes of spec 003 read from observation texts, and the order used for context."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from graphmem.domain.observation_text import context_order, parse_observation


def test_the_spec_example_gives_its_time_and_status():
    parsed = parse_observation("[2025-04-08T10:00:00Z] [S:Active] 状态: 健康")
    assert parsed.timestamp == datetime(2025, 4, 8, 10, 0, tzinfo=UTC)
    assert parsed.status == "active"
    assert parsed.text == "[2025-04-08T10:00:00Z] [S:Active] 状态: 健康"


@pytest.mark.parametrize(
    ("text", "timestamp", "status"),
    [
        ("[S:Resolved] [2024-01-02] fixed", datetime(2024, 1, 2, tzinfo=UTC), "resolved"),
        ("[2024-01-02T03:04:05+02:00] moved", datetime(2024, 1, 2, 1, 4, 5, tzinfo=UTC), None),
        ("plain fact [S:Active]", None, None),
        ("[2024-13-45] not a date", None, None),
        ("[note] [S:Active] not at the start", None, None),
        ("[S:Active][S:Archived] the first status counts", None, "active"),
    ],
)
def test_prefixes_are_read_only_at_the_start(text, timestamp, status):
    parsed = parse_observation(text)
    assert (parsed.timestamp, parsed.status) == (timestamp, status)


def test_context_order_puts_active_first_then_newest_history_then_the_rest_and_drops_archived():
    observations = [
        "likes tea",
        "[2023-05-01] moved to Oslo",
        "[S:Archived] [2020-01-01] lived in Rome",
        "[2024-02-01] moved to Berlin",
        "[S:Active] works at Acme",
        "speaks Norwegian",
        "[2024-02-01] started a new job",
    ]
    assert context_order(observations) == [
        "[S:Active] works at Acme",
        "[2024-02-01] moved to Berlin",
        "[2024-02-01] started a new job",
        "[2023-05-01] moved to Oslo",
        "likes tea",
        "speaks Norwegian",
    ]
