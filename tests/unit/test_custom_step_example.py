"""examples/custom_step.py: an embedding program's step kind brings its own edges, which
its vocabulary accepts (out of that kind only), mailbridge's refuses, and runs follow."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_step.py"
SPEC_TYPES = "('default', 'condition_met', 'condition_not_met', 'timeout', 'event_received')"


def test_the_custom_step_example(capsys: pytest.CaptureFixture[str]) -> None:
    main = runpy.run_path(str(EXAMPLE), run_name="custom_step_example")["main"]
    summary = main()

    assert summary.connection_types == (
        "default", "condition_met", "condition_not_met", "event_received", "high", "low",
        "timeout",
    )  # fmt: skip
    # A vocabulary without the kind knows neither it nor its edges.
    assert f"route: connection type 'high' is not one of {SPEC_TYPES}" in (
        summary.refused_without_the_kind
    )
    assert f"route: connection type 'low' is not one of {SPEC_TYPES}" in (
        summary.refused_without_the_kind
    )
    assert any(
        problem.startswith("route: unknown step type 'branch_by_score'")
        for problem in summary.refused_without_the_kind
    )
    # With it, the new edges leave only its steps, and only they leave its steps.
    assert summary.refused_misplaced == [
        "route: a 'default' connection cannot leave it (only high, low)",
        "book_call: a 'low' connection cannot leave it (only default)",
    ]
    assert summary.stored_types == ["score_branch", "send", "delay", "send"]

    # The runs took the edge the step named: high straight to the call, low via a week.
    assert summary.runs == {
        "hot@example.com": ("completed", ["route:completed", "book_call:completed"]),
        "cold@example.com": (
            "completed",
            ["route:completed", "a_week:completed", "guide:completed"],
        ),
    }
    assert summary.scores == {"hot@example.com": {"score": 82}, "cold@example.com": {"score": 17}}
    assert summary.emails == [
        ("hot@example.com", "A call this week?"),
        ("cold@example.com", "Your getting-started guide"),
    ]
    assert "cold@example.com  completed  route:completed -> a_week:completed" in (
        capsys.readouterr().out
    )
