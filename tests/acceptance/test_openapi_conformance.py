"""Schemathesis over the OpenAPI document, against `mailbridge api` as a client meets it.

Every check and every phase (examples, coverage, fuzzing, stateful), configured by
``schemathesis.toml`` at the repository root (which names each spec rule that answers
422 to input a schema cannot call invalid). Any failure of any kind fails this test;
its report (with a curl line per failure) is in the assertion message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.acceptance.conftest import Server

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 900


@pytest.fixture
def environment(environment: dict[str, str]) -> dict[str, str]:
    # The run sends hundreds of emails in a minute: the per-key send limit is not under test.
    environment["MAILBRIDGE_SEND_RATE_LIMIT"] = "100000/second"
    return environment


def test_schemathesis_finds_nothing(server: Server) -> None:
    token = server.create_key()["token"]
    st = Path(sys.executable).with_name("st")
    answer = subprocess.run(
        [
            str(st),
            "--config-file",
            str(ROOT / "schemathesis.toml"),
            "run",
            f"{server.base_url}/openapi.json",
            "--header",
            f"Authorization: Bearer {token}",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--no-color",
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
        check=False,
    )
    report = answer.stdout + answer.stderr
    assert answer.returncode == 0, report[-30_000:]
    assert "Tested: " in report, report[-5_000:]
    log = server.log.read_text()
    assert "Traceback" not in log, log[-10_000:]
    assert server.stop() == 0
