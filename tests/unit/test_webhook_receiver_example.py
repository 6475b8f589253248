"""The README's example receiver (examples/webhook_receiver.py) does what it says: a signed
delivery is accepted once, a tampered or unsigned one is 401."""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from mailbridge.webhooks import signed_headers

SECRET = "whsec_example-secret"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("WEBHOOK_SECRET", SECRET)
    monkeypatch.syspath_prepend(str(ROOT))
    sys.modules.pop("examples.webhook_receiver", None)
    return importlib.import_module("examples.webhook_receiver")


async def test_the_example_receiver_checks_signatures_and_drops_repeats(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    body = json.dumps({"type": "email.delivered", "created_at": "x", "data": {"n": 1}}).encode()
    headers = signed_headers(SECRET, int(time.time()), body, "evt-1")
    transport = httpx.ASGITransport(app=example.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://receiver") as client:
        for _ in range(2):
            response = await client.post("/mailbridge", content=body, headers=headers)
            assert response.status_code == 200
        tampered = await client.post("/mailbridge", content=body + b" ", headers=headers)
        assert tampered.status_code == 401
        unsigned = await client.post("/mailbridge", content=body)
        assert unsigned.status_code == 401
    assert capsys.readouterr().out.splitlines() == ["email.delivered {'n': 1}"]
