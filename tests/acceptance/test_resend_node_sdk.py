"""Resend's official Node SDK (tests/node, pinned by package-lock.json) against a running
mailbridge: every file of tests/node/api under ``node --test``, pointed at the server by
the SDK's own ``RESEND_BASE_URL`` and a fresh full-access key."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.acceptance.conftest import Server

NODE_TESTS = Path(__file__).resolve().parents[1] / "node"


def test_the_node_sdk_calls_work_unchanged(server: Server) -> None:
    node = shutil.which("node")
    assert node is not None, "node is on the machine (the brief's stack)"
    assert (NODE_TESTS / "node_modules" / "resend").is_dir(), "make test runs npm ci first"
    files = sorted(str(path) for path in (NODE_TESTS / "api").glob("*.test.mjs"))
    assert files, "tests/node/api holds the SDK's calls"
    env = {
        **os.environ,
        "RESEND_BASE_URL": server.base_url,
        "RESEND_API_KEY": server.create_key()["token"],
    }
    result = subprocess.run(
        [node, "--test", "--test-concurrency=1", *files],
        cwd=NODE_TESTS, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout, result.stdout
