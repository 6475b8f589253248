"""examples/embed.py runs as documented and does what it says."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed.py"


def test_the_embedding_example(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE), run_name="embed_example")["main"]
    summary = main()

    assert summary.problems == [
        "three_days: config.duration: a duration is at most 30 days",
        "nudge: config.template.id: template 'draft' is not published",
        "activated: a 'default' connection cannot leave it (only condition_met, condition_not_met)",
    ]
    welcomes, follow_ups = summary.emails[:2], summary.emails[2:]  # runs advance in id order
    assert sorted(welcomes) == [
        ("ada@example.com", "Welcome to Acme"),
        ("bob@example.com", "Welcome to Acme"),
    ]
    assert follow_ups == [("bob@example.com", "Need a hand getting started?")]
    assert summary.runs == {
        "ada@example.com": (
            "completed",
            [
                "welcome:completed", "three_days:completed", "activated:completed",
                "mark_active:completed",
            ],
        ),
        "bob@example.com": (
            "completed",
            ["welcome:completed", "three_days:completed", "activated:completed", "nudge:completed"],
        ),
    }  # fmt: skip
    assert summary.contacts == {
        "ada@example.com": {"activated": True, "stage": "active"},
        "bob@example.com": {},
    }

    printed = capsys.readouterr().out
    assert "A broken graph is refused with every problem:" in printed
    assert "stored types: ['send', 'delay', 'condition', 'contact_update', 'send']" in printed
    assert "variables={'PLAN': 'pro'}" in printed
    assert "bob@example.com    completed" in printed
