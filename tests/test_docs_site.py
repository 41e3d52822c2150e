"""The documentation site builds with `mkdocs build --strict`, without a single warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.helpers_docs import ROOT, pages


@pytest.mark.slow
def test_the_docs_site_builds_in_strict_mode_without_warnings(tmp_path):
    # Material's notice about MkDocs 2.0 is not about our pages; everything else counts.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert not re.search(r"^WARNING\b", log, re.MULTILINE), log
    assert (tmp_path / "site" / "index.html").exists()


def test_every_docs_page_is_in_the_site_navigation():
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in (ROOT / "docs").rglob("*.md"):
        assert f": {page.relative_to(ROOT / 'docs')}" in config, page


@pytest.mark.parametrize("page", pages(), ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_sends_the_reader_to_a_specification_or_an_issue(page):
    # Readers know features by what they do; internal document names and tracker numbers mean nothing to them.
    text = page.read_text(encoding="utf-8")
    found = re.findall(r"\bspecs?\b|\bspec-?\d+|\bissues?\b|(?<![\w/])#\d+\b", text, re.IGNORECASE)
    assert found == [], f"{page.name}: {found}"
