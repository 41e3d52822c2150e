"""The package's public surface: `__all__` is sorted, complete and importable."""

from __future__ import annotations

import graphmem


def test_all_is_sorted():
    assert graphmem.__all__ == sorted(graphmem.__all__)


def test_every_name_in_all_is_importable():
    for name in graphmem.__all__:
        assert getattr(graphmem, name) is not None


def test_every_public_error_is_exported():
    from graphmem.core import errors

    assert set(errors.__all__) <= set(graphmem.__all__)


def test_importing_graphmem_does_not_import_the_mcp_sdk():
    import subprocess
    import sys

    code = "import sys, graphmem; print('mcp' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
