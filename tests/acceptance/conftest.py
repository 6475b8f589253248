"""The acceptance tier: the real ``mailbridge`` processes, spoken to over real HTTP."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
import resend

from tests.acceptance.sdk_surface import Twins

STARTUP_TIMEOUT = 120.0  # a busy machine starts a process slowly
PROGRESS_WAIT = 30.0  # kill_mid_work: the longest wait for a started process to show work
_Progress = TypeVar("_Progress")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def mailbridge(
    *args: str, env: dict[str, str], check: bool = True
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mailbridge", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=check,
    )


def admin(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``mailbridge admin …`` for a test's setup, run in this process by typer's test
    runner with ``env``'s settings: the command's own code, without a new interpreter
    that imports the whole server first (about 3 s a command, and the suite's setups make
    hundreds). Tests of the executable itself — exit codes, error objects — run
    :func:`mailbridge`."""
    from typer.testing import CliRunner

    from mailbridge.cli.main import app

    settings = {key: value for key, value in env.items() if key.startswith("MAILBRIDGE_")}
    others = {key: None for key in os.environ if key.startswith("MAILBRIDGE_")}
    result = CliRunner().invoke(app, ["admin", *args], env={**others, **settings})
    if result.exit_code != 0:
        raise AssertionError(f"admin {' '.join(args)} exited {result.exit_code}: {result.output}")
    return subprocess.CompletedProcess(["admin", *args], 0, result.stdout, "")


@dataclass
class Server:
    process: subprocess.Popen[str]
    base_url: str
    env: dict[str, str]
    log: Path

    def stop(self, signum: int = signal.SIGTERM, timeout: float = 60.0) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=timeout)

    def create_key(self, *args: str) -> dict[str, str]:
        result = admin("keys", "create", "--name", "acceptance", *args, env=self.env)
        created: dict[str, str] = json.loads(result.stdout)
        return created


@pytest.fixture
def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILBRIDGE_")}
    env["MAILBRIDGE_DATA_DIR"] = str(tmp_path / "var")
    # serve's SMTP listener on a free port: never the default 2525 a developer's serve holds
    env["MAILBRIDGE_INBOUND_SMTP"] = f"127.0.0.1:{free_port()}"
    return env


def start(command: str, env: dict[str, str], log: Path, port: int | None = None) -> Server:
    port = port or free_port()
    with log.open("w") as handle:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mailbridge",
                command,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            text=True,
        )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{command} exited early:\n{log.read_text()}")
        try:
            if httpx.get(f"{base_url}/health", timeout=1).status_code == 200:
                return Server(process, base_url, env, log)
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"{command} did not start:\n{log.read_text()}")


@pytest.fixture
def server(environment: dict[str, str], tmp_path: Path) -> Iterator[Server]:
    admin("teams", "create", "--name", "acme", env=environment)
    running = start("serve", environment, tmp_path / "serve.log")
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


@pytest.fixture
def sdk(server: Server) -> Iterator[Server]:
    """The official Resend SDK pointed at ``server`` with a fresh full-access key; the
    async twin of every sync method the test calls is then held to the same requests
    (``sdk_surface.Twins``)."""
    saved = resend.api_key, resend.api_url
    resend.api_url = server.base_url
    resend.api_key = server.create_key()["token"]
    twins = Twins()
    twins.install()
    try:
        yield server
    finally:
        twins.uninstall()
        problems = twins.check()
        resend.api_key, resend.api_url = saved
    assert twins.calls, "the test calls the SDK"
    assert not problems, "\n".join(problems)


def kill_mid_work(
    start: Callable[[], subprocess.Popen[bytes]],
    progress: Callable[[], _Progress],
    done: Callable[[_Progress], bool],
    kills: int,
    rng: random.Random,
) -> int:
    """Start a process ``kills`` times and SIGKILL each one a random instant (0 to 0.3 s)
    after the database shows it working, so that kills land in the work rather than in
    the start-up; stops early once ``done``. The number of kills after which the
    database had moved on and the work was not done: the kills that landed mid-work."""
    mid_work, seen = 0, progress()
    for _ in range(kills):
        process = start()
        try:
            # Not an assertion: without progress by then (nothing was due yet), kill anyway.
            deadline = time.monotonic() + PROGRESS_WAIT
            while progress() == seen and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(rng.uniform(0, 0.3))
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(60)
        before, seen = seen, progress()
        if done(seen):
            break
        mid_work += seen != before
    return mid_work
