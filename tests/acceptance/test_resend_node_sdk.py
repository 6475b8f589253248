"""Resend's official Node SDK (tests/node, pinned by package-lock.json) against a running
mailbridge: every file of tests/node/api under ``node --test``, pointed at the server by
the SDK's own ``RESEND_BASE_URL`` and a fresh full-access key. Among them
``surface.test.mjs`` walks the SDK's client and fails when a public method is called by
no test there (what mailbridge leaves out on purpose listed with its reason).

The team sends from and receives for the verified shop.io; another team holds the
verified held.io (to be claimed); webhooks may reach the tests' own loopback receiver;
the public URL is the server's own, so that signed links (a received email's raw
download, which the SDK's forward fetches) lead back to it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.acceptance.conftest import Server, admin, free_port, start

NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


@pytest.fixture
def node_server(environment: dict[str, str], tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    env = {
        **environment,
        "MAILBRIDGE_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "MAILBRIDGE_WEBHOOK_ALLOW_PRIVATE": "true",
    }
    admin("teams", "create", "--name", "acme", "--plan", "pro", env=env)
    admin("domains", "add", "shop.io", "--verified", "--receiving", "--team", "acme", env=env)
    admin("teams", "create", "--name", "holder", env=env)
    admin("domains", "add", "held.io", "--verified", "--team", "holder", env=env)
    running = start("serve", env, tmp_path / "serve.log", port=port)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def test_the_node_sdk_calls_work_unchanged(node_server: Server) -> None:
    node = shutil.which("node")
    assert node is not None, "node is on the machine (the brief's stack)"
    assert (NODE_TESTS / "node_modules" / "resend").is_dir(), "make test runs npm ci first"
    files = sorted(str(path) for path in (NODE_TESTS / "api").glob("*.test.mjs"))
    assert len(files) > 1, "tests/node/api holds the SDK's calls"
    env = {
        **os.environ,
        "RESEND_BASE_URL": node_server.base_url,
        "RESEND_API_KEY": node_server.create_key("--team", "acme")["token"],
        "MAILBRIDGE_INBOUND_SMTP": node_server.env["MAILBRIDGE_INBOUND_SMTP"],
        "HELD_DOMAIN": "held.io",
    }
    result = subprocess.run(
        [node, "--test", "--test-concurrency=1", *files],
        cwd=NODE_TESTS, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-20_000:] + result.stderr[-5_000:]
    assert "# fail 0" in result.stdout, result.stdout[-20_000:]
    print(next(line for line in result.stdout.splitlines() if "SDK methods" in line))
