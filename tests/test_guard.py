"""The HTTP guard in process: Host and Origin rules, the token, what passes to the app."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from starlette.types import Receive, Scope, Send

from graphmem.config import Credential, Identity
from graphmem.server.access import IDENTITY_KEY
from graphmem.transports.guard import RequestGuard, allowed_host_names, host_name, identify

pytestmark = pytest.mark.anyio

TOKEN = "a-token-of-sixteen-or-more"


async def ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


def client(guard: RequestGuard) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=guard), base_url="http://127.0.0.1:8765")


@pytest.mark.parametrize(
    ("value", "name"),
    [
        ("127.0.0.1:8765", "127.0.0.1"),
        ("LOCALHOST", "localhost"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("memory.example:443", "memory.example"),
    ],
)
def test_host_name_drops_the_port_brackets_and_case(value: str, name: str):
    assert host_name(value) == name


def test_a_server_bound_to_one_address_answers_to_it_and_to_loopback_names():
    names = allowed_host_names("10.1.2.3", ["memory.example"])
    assert {"10.1.2.3", "localhost", "127.0.0.1", "::1", "memory.example"} <= names
    assert "0.0.0.0" not in allowed_host_names("0.0.0.0", [])


async def test_requests_with_loopback_hosts_pass_and_others_get_421():
    guard = RequestGuard(ok, allowed_hosts=allowed_host_names("127.0.0.1", []))
    with anyio.fail_after(5):
        async with client(guard) as http:
            passed = [(await http.get("/mcp", headers={"host": h})).status_code for h in ("localhost:1", "127.0.0.2")]
            refused = await http.get("/mcp", headers={"host": "attacker.example:8765"})
            empty = await http.get("/mcp", headers={"host": ""})
    assert passed == [200, 200]
    assert refused.status_code == 421
    assert "--allowed-host" in refused.json()["error"]["message"]
    assert empty.status_code == 421


async def test_an_origin_is_allowed_when_this_server_serves_it_or_exactly_and_null_is_refused():
    guard = RequestGuard(ok, allowed_hosts=allowed_host_names("127.0.0.1", []), allowed_origins=["https://app.example"])
    with anyio.fail_after(5):
        async with client(guard) as http:
            codes = {
                origin: (await http.get("/mcp", headers={"origin": origin})).status_code
                for origin in (
                    "http://127.0.0.1:8765",
                    "http://localhost:8765",
                    "http://[::1]:8765",
                    "https://app.example/",
                    "https://evil.example",
                    "null",
                )
            }
    assert codes == {
        "http://127.0.0.1:8765": 200,
        "http://localhost:8765": 200,
        "http://[::1]:8765": 200,
        "https://app.example/": 200,
        "https://evil.example": 403,
        "null": 403,
    }


@pytest.mark.parametrize(
    "origin", ["http://localhost:3000", "http://127.0.0.1:8766", "http://127.0.0.1", "https://127.0.0.1:8765"]
)
async def test_a_loopback_origin_on_another_port_or_scheme_is_refused(origin: str):
    # Issue 27, item 19: any loopback page, a dev server on another port included, passed.
    guard = RequestGuard(ok, allowed_hosts=allowed_host_names("127.0.0.1", []))
    with anyio.fail_after(5):
        async with client(guard) as http:
            refused = await http.post("/mcp", headers={"origin": origin})
    assert refused.status_code == 403
    assert "--allowed-origin" in refused.json()["error"]["message"]


async def test_an_origin_naming_the_request_s_own_host_passes_as_a_tunnel_or_proxy_shows_it():
    guard = RequestGuard(ok, allowed_hosts=allowed_host_names("127.0.0.1", ["memory.example"]))
    with anyio.fail_after(5):
        async with client(guard) as http:
            tunnel = await http.post("/mcp", headers={"host": "localhost:9000", "origin": "http://localhost:9000"})
            named = await http.post("/mcp", headers={"host": "memory.example", "origin": "http://memory.example"})
            other = await http.post("/mcp", headers={"host": "localhost:9000", "origin": "http://localhost:9001"})
    assert (tunnel.status_code, named.status_code, other.status_code) == (200, 200, 403)


async def test_the_token_is_needed_everywhere_but_health():
    guard = RequestGuard(
        ok, allowed_hosts=allowed_host_names("127.0.0.1", []), credentials=[Credential(TOKEN, Identity(None))]
    )
    with anyio.fail_after(5):
        async with client(guard) as http:
            health = await http.get("/health")
            missing = await http.get("/mcp")
            lower = await http.get("/mcp", headers={"authorization": f"bearer {TOKEN}"})
            prefix = await http.get("/mcp", headers={"authorization": f"Bearer {TOKEN[:-1]}"})
    assert (health.status_code, missing.status_code, lower.status_code, prefix.status_code) == (200, 401, 200, 401)
    assert missing.headers["www-authenticate"] == 'Bearer realm="graphmem"'


ALICE = Credential("alice-token-0123456789", Identity("alice", can_write=True))
CI = Credential("ci-token-0123456789abc", Identity("ci", can_write=False))


async def test_each_named_token_passes_with_its_identity_in_the_scope_and_an_unknown_one_gets_401():
    seen: list[object] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(scope.get(IDENTITY_KEY))
        await ok(scope, receive, send)

    guard = RequestGuard(app, allowed_hosts=allowed_host_names("127.0.0.1", []), credentials=[ALICE, CI])
    with anyio.fail_after(5):
        async with client(guard) as http:
            statuses = [
                (await http.get("/mcp", headers={"authorization": f"Bearer {token}"})).status_code
                for token in (CI.token, ALICE.token, "nobody-token-0123456789")
            ]
    assert statuses == [200, 200, 401]
    assert seen == [CI.identity, ALICE.identity]


def test_a_presented_token_is_compared_with_every_configured_token_even_after_a_match():
    looked_at: list[str] = []

    def configured():
        for credential in (ALICE, CI, Credential("bob-token-0123456789ab", Identity("bob"))):
            looked_at.append(credential.identity.name or "")
            yield credential

    assert identify(ALICE.token, configured()) == ALICE.identity
    assert looked_at == ["alice", "ci", "bob"]
    looked_at.clear()
    assert identify("wrong-token-0123456789", configured()) is None
    assert looked_at == ["alice", "ci", "bob"]
