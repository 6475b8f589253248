"""Plans and their caps. ``None`` means no cap."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Plan:
    name: str
    daily_emails: int | None
    monthly_emails: int | None
    verified_domains: int | None
    monthly_automation_runs: int | None


PLANS: dict[str, Plan] = {
    "free": Plan(
        "free",
        daily_emails=100,
        monthly_emails=3_000,
        verified_domains=1,
        monthly_automation_runs=3_000,
    ),
    "pro": Plan(
        "pro",
        daily_emails=None,
        monthly_emails=50_000,
        verified_domains=10,
        monthly_automation_runs=100_000,
    ),
    # A self-hosted team that answers to nobody's quota (large campaigns, benchmarks).
    "unlimited": Plan(
        "unlimited",
        daily_emails=None,
        monthly_emails=None,
        verified_domains=None,
        monthly_automation_runs=None,
    ),
}


def plan_named(name: str) -> Plan:
    return PLANS[name]
