"""The explorer's files as shipped: vendored libraries exactly as pinned, with their licences, and a
page that loads nothing from elsewhere and lays out with fCoSE.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "src" / "graphmem" / "explorer" / "static"
VENDOR = STATIC / "vendor"


def vendored_rows() -> list[dict[str, str]]:
    lines = [line for line in (VENDOR / "VENDORED.md").read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)) for line in lines[2:]]


def test_every_vendored_file_is_the_one_its_note_pins_and_has_its_licence_beside_it():
    rows = vendored_rows()
    listed = {row["file"] for row in rows}
    on_disk = {path.name for path in VENDOR.iterdir() if path.name != "VENDORED.md"}
    assert listed == on_disk
    for row in rows:
        data = (VENDOR / row["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == row["file sha256"], row["file"]
        assert row["licence"] == "MIT"
    for package in {row["package"] for row in rows}:
        assert f"{package}.LICENSE" in listed
        assert "Permission is hereby granted" in (VENDOR / f"{package}.LICENSE").read_text(encoding="utf-8")


def test_the_pinned_versions_are_cytoscape_3_34_with_fcose():
    versions = {row["package"]: row["version"] for row in vendored_rows()}
    assert versions["cytoscape"].startswith("3.34.")
    assert set(versions) == {"cytoscape", "cytoscape-fcose", "cose-base", "layout-base"}


def test_the_page_loads_nothing_from_elsewhere_and_no_inline_script():
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    references = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert references, "the page references its files"
    assert all(not re.match(r"[a-z]+://|//", reference) for reference in references), references
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", page) is None, "inline script would be refused by the CSP"
    assert "style=" not in page


def test_the_page_lays_the_graph_out_with_fcose_never_the_slow_built_in_cose():
    scripts = "\n".join(path.read_text(encoding="utf-8") for path in STATIC.rglob("*.js") if "vendor" not in path.parts)
    assert re.search(r"""name:\s*["']fcose["']""", scripts)
    assert re.search(r"""name:\s*["']cose["']""", scripts) is None


@pytest.mark.slow
def test_the_vendor_script_fetches_the_packages_again_and_finds_them_identical():
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed: scripts/vendor-js fetches the packages with npm pack")
    result = subprocess.run(
        [str(ROOT / "scripts" / "vendor-js"), "--check"], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok  ") == len(vendored_rows())
