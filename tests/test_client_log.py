"""The log relay collects graphmem's records for clients, at the level they asked for, from any thread."""

from __future__ import annotations

import logging
import threading

from graphmem.server.client_log import CLIENT_LEVELS, LogRelay, python_level


def test_every_mcp_level_maps_to_a_python_level_in_mcp_order():
    levels = [python_level(name) for name in CLIENT_LEVELS]
    assert levels == sorted(levels) and len(set(levels)) == 8
    assert python_level("warning") == logging.WARNING


def test_the_relay_collects_nothing_until_asked_and_then_from_that_level_on():
    relay = LogRelay("graphmem.test_relay")
    logger = logging.getLogger("graphmem.test_relay")
    logger.setLevel(logging.DEBUG)
    relay.attach()
    try:
        logger.warning("before anyone asked")
        assert not relay.has_pending()
        relay.listen_from(python_level("notice"))
        logger.info("too mild")
        logger.log(25, "a notice")
        thread = threading.Thread(target=logger.error, args=("from %s", "a worker thread"))
        thread.start()
        thread.join()
        records = relay.drain()
    finally:
        relay.detach()
        logger.setLevel(logging.NOTSET)
    assert [(record.level, record.message) for record in records] == [
        ("notice", "a notice"),
        ("error", "from a worker thread"),
    ]
    assert not relay.has_pending()
