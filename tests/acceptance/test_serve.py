"""`mailbridge serve` as a user meets it: started, called over HTTP, stopped with SIGTERM."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.acceptance.conftest import Server, mailbridge, start

UA = {"User-Agent": "acceptance/1.0"}


def test_serve_answers_and_stops_cleanly_on_sigterm(server: Server) -> None:
    key = server.create_key()
    headers = {**UA, "Authorization": f"Bearer {key['token']}"}
    listed = httpx.get(f"{server.base_url}/api-keys", headers=headers)
    assert listed.status_code == 200
    assert [item["id"] for item in listed.json()["data"]] == [key["id"]]
    missing = httpx.get(f"{server.base_url}/api-keys", headers=UA)
    assert missing.status_code == 401 and missing.json()["name"] == "missing_api_key"
    assert server.stop(signal.SIGTERM) == 0
    assert "Traceback" not in server.log.read_text()


def test_revoked_key_stops_working_across_processes(server: Server) -> None:
    key = server.create_key()
    headers = {**UA, "Authorization": f"Bearer {key['token']}"}
    assert httpx.get(f"{server.base_url}/api-keys", headers=headers).status_code == 200
    mailbridge("admin", "keys", "revoke", key["id"], env=server.env)
    # A serving process remembers a valid key for at most a second (the auth cache).
    deadline = time.monotonic() + 30
    refused = httpx.get(f"{server.base_url}/api-keys", headers=headers)
    while refused.status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.1)
        refused = httpx.get(f"{server.base_url}/api-keys", headers=headers)
    assert refused.status_code == 403 and refused.json()["name"] == "invalid_api_key"
    assert server.stop() == 0


def test_sending_key_limited_to_a_domain_is_restricted(server: Server) -> None:
    key = server.create_key("--permission", "sending_access", "--domain", "mail.acme.io")
    assert key["permission"] == "sending_access" and key["domain"] == "mail.acme.io"
    response = httpx.get(
        f"{server.base_url}/logs", headers={**UA, "Authorization": f"Bearer {key['token']}"}
    )
    assert response.status_code == 401 and response.json()["name"] == "restricted_api_key"
    assert server.stop() == 0


def test_make_run_flow_prints_a_key_that_works_with_curl(
    environment: dict[str, str], tmp_path: Path
) -> None:
    """What `make run` does: db upgrade, bootstrap (first key + curl line), serve."""
    mailbridge("db", "upgrade", env=environment)
    server = start("serve", environment, tmp_path / "serve.log")
    try:
        port = server.base_url.rsplit(":", 1)[1]
        printed = mailbridge("bootstrap", "--port", port, env=environment).stdout
        curl_line = next(line.strip() for line in printed.splitlines() if "curl" in line)
        answer = subprocess.run(
            shlex.split(curl_line), capture_output=True, text=True, timeout=30, check=True
        )
        body = json.loads(answer.stdout)
        assert body["object"] == "list" and len(body["data"]) == 1
        # A self-hoster's first team answers to no quota (MAILBRIDGE_DEFAULT_PLAN sets another).
        assert "plan unlimited" in printed
        header = next(word for word in shlex.split(curl_line) if word.startswith("Authorization:"))
        bearer = header.split(":", 1)[1].strip()
        usage = httpx.get(f"{server.base_url}/usage", headers={**UA, "Authorization": bearer})
        assert usage.json()["plan"] == "unlimited", usage.text
        again = mailbridge("bootstrap", env=environment).stdout
        assert "has a team already" in again
    finally:
        assert server.stop() == 0


def test_api_and_runner_run_apart_and_stop_on_sigterm(
    environment: dict[str, str], tmp_path: Path
) -> None:
    mailbridge("admin", "teams", "create", "--name", "solo", env=environment)
    api = start("api", environment, tmp_path / "api.log")
    with (tmp_path / "runner.log").open("w") as log:
        runner = subprocess.Popen(
            [sys.executable, "-m", "mailbridge", "runner"],
            env=environment,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "runner started" not in (tmp_path / "runner.log").read_text():
            assert runner.poll() is None, (tmp_path / "runner.log").read_text()
            assert time.monotonic() < deadline, "runner did not start"
            time.sleep(0.1)
        token = api.create_key()["token"]
        ok = httpx.get(
            f"{api.base_url}/api-keys", headers={**UA, "Authorization": f"Bearer {token}"}
        )
        assert ok.status_code == 200
    finally:
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=60) == 0
        assert api.stop() == 0
    assert "runner stopped" in (tmp_path / "runner.log").read_text()


@pytest.mark.parametrize(
    ("args", "status", "name"),
    [
        (["admin", "teams", "create"], None, "cli_error"),
        (["admin", "keys", "create", "--name", "x", "--permission", "root"], None, "cli_error"),
        (["admin", "keys", "revoke", "no-such-key"], 404, "not_found"),
        (["admin", "keys", "create", "--name", "x"], None, "cli_error"),  # no team yet
    ],
)
def test_operator_errors_are_json_on_stderr_with_exit_1(
    environment: dict[str, str], args: list[str], status: int | None, name: str
) -> None:
    result = mailbridge(*args, env=environment, check=False)
    assert result.returncode == 1
    error = json.loads(result.stderr.strip().splitlines()[-1])
    assert error["name"] == name and error["statusCode"] == status
    assert error["message"]
