"""Where signing in sends the browser: a clean path of the dashboard, or its home.

Every spelling that a browser or a server could resolve outside ``/dashboard`` (dot
segments, encoded slashes and dots, backslashes, a scheme or a host, control
characters) lands on ``/dashboard``."""

from __future__ import annotations

import pytest

from mailbridge.dashboard._signing_in import _safe_next


@pytest.mark.parametrize(
    "target",
    [
        "/dashboard",
        "/dashboard/emails",
        "/dashboard/emails?status=sent&after=2026-01-01",
        "/dashboard/emails/0191a3c2-7f00-7000-8000-000000000001",
        "/dashboard/logs#latest",
        "/dashboard/contacts?q=ann%40corp.io",  # an encoded query is the page's own
    ],
)
def test_a_clean_dashboard_path_is_kept(target: str) -> None:
    assert _safe_next(target) == target


@pytest.mark.parametrize(
    "target",
    [
        "/dashboard/../t/c/x",
        "/dashboard/..",
        "/dashboard/./../x",
        "/dashboard/./emails",
        "/dashboard/%2e%2e/x",
        "/dashboard/%2E%2e/t/c/x",
        "/dashboard/.%2e/x",
        "/dashboard/..%2fx",
        "/dashboard%2f..%2fx",
        "/dashboard%2F..%2Ft%2Fc%2Fx",
        "/dashboard/%252e%252e/x",  # encoded twice
        "/dashboard/..%5cx",
        "/dashboard\\..\\x",
        "/dashboard/\\evil.io",
        "//evil.io",
        "//evil.io/dashboard",
        "/\\evil.io",
        "\\\\evil.io/dashboard",
        "https://evil.io/dashboard",
        "http:/dashboard",
        "javascript:alert(1)",
        "javascript:/dashboard",
        "/dashboard//evil.io",
        "/dashboard/\t/../x",
        "/dash\tboard/../x",
        "/dashboard/\n/x",
        "/dashboard/\r\nLocation: https://evil.io",
        "/dashboard/ x",
        "/dashboard/%09/x",
        "/dashboard/caf\u00e9",
        " /dashboard",
        "/dashboardevil",
        "/dashboard-evil.io",
        "dashboard/emails",
        "/t/c/x",
        "",
        "/dashboard/" + "a" * 2000,
    ],
)
def test_anything_else_goes_to_the_dashboards_home(target: str) -> None:
    assert _safe_next(target) == "/dashboard"


def test_no_target_goes_home() -> None:
    assert _safe_next(None) == "/dashboard"
