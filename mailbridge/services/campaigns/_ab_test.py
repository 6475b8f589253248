"""A/B tests for campaigns: who gets which variant, and which variant won.

Pure functions, no I/O.

Assignment (``variant_of``): ``sha256(f"{campaign_id}:{contact_id}")`` is read as two
independent uniform numbers. The first 8 bytes, as a big-endian integer divided by 2**64, give
``u`` in [0, 1); the contact is in the test group when ``u < test_fraction``. The top bit of byte 8
then splits the test group evenly into "A" and "B". Everyone else (``None``) is "the rest", who
later receive the winner. The hash is stable across processes and machines (no Python ``hash()``).

Decision (``decide``): each arm's rate is ``conversions / sent`` (opens, clicks or replies per
email sent). B is compared with A by the pooled two-proportion z-test:

    p  = (ca + cb) / (na + nb)                  # the common rate if A and B did not differ
    se = sqrt(p (1 - p) (1/na + 1/nb))          # standard error of rate_b - rate_a under that null
    z  = (rate_b - rate_a) / se

and the two-sided p-value is ``2 (1 - Phi(|z|)) = erfc(|z| / sqrt 2)``: the probability of a
difference at least this large if both variants performed the same. The arm with the higher rate
wins; a tie, or an arm with no sends, falls back to A. Confidence is "low" while an arm has fewer
than 20 sends, "high" when p < 0.05 (with both arms at 20 or more), else "medium".
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

__all__ = ["METRICS", "MIN_SENDS", "SIGNIFICANCE", "AbResult", "Arm", "decide", "variant_of"]

METRICS = ("open", "click", "reply")
"""The conversion metrics an A/B test can be decided on."""

MIN_SENDS = 20
"""An arm with fewer sends than this makes the result "low" confidence."""

SIGNIFICANCE = 0.05
"""A p-value below this (with enough sends) makes the result "high" confidence."""


def variant_of(campaign_id: str, contact_id: str, test_fraction: float) -> str | None:
    """The contact's variant in the campaign's A/B test: "A", "B", or None for the rest.

    Deterministic: the same (campaign, contact, fraction) always gives the same answer, in any
    process. About ``test_fraction`` of contacts are in the test, split evenly between A and B.
    """
    if not 0.0 <= test_fraction <= 1.0:  # also rejects NaN
        raise ValueError(f"test_fraction must be between 0 and 1, got {test_fraction!r}")
    digest = hashlib.sha256(f"{campaign_id}:{contact_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    # u can round up to exactly 1.0 for the very largest integers; 1.0 still means everyone.
    if u < test_fraction or test_fraction >= 1.0:
        return "A" if digest[8] < 0x80 else "B"
    return None


@dataclass(frozen=True, slots=True)
class Arm:
    """One variant's figures: emails sent and conversions (opens, clicks or replies)."""

    variant: str
    sent: int
    conversions: int

    def __post_init__(self) -> None:
        if self.sent < 0 or self.conversions < 0:
            raise ValueError(f"arm {self.variant}: sent and conversions must not be negative")
        if self.conversions > self.sent:
            raise ValueError(
                f"arm {self.variant}: {self.conversions} conversions but only {self.sent} sent"
            )

    @property
    def rate(self) -> float:
        """conversions / sent as a fraction; 0.0 when nothing was sent."""
        return self.conversions / self.sent if self.sent else 0.0

    def as_json(self) -> dict[str, object]:
        return {
            "variant": self.variant,
            "sent": self.sent,
            "conversions": self.conversions,
            "rate": round(self.rate, 6),
        }


@dataclass(frozen=True, slots=True)
class AbResult:
    """The outcome of an A/B test (``GET /campaigns/:id/ab``). Full precision; rounded in JSON."""

    metric: str
    a: Arm
    b: Arm
    winner: str
    fallback: bool
    lift: float
    z_score: float
    p_value: float
    confidence: str
    reason: str

    def as_json(self, campaign_id: str) -> dict[str, object]:
        return {
            "object": "campaign_ab",
            "campaign_id": campaign_id,
            "metric": self.metric,
            "a": self.a.as_json(),
            "b": self.b.as_json(),
            "winner": self.winner,
            "fallback": self.fallback,
            "lift": round(self.lift, 6),
            "zScore": round(self.z_score, 6),
            "pValue": round(self.p_value, 6),
            "confidence": self.confidence,
            "reason": self.reason,
        }


def decide(a: Arm, b: Arm, metric: str) -> AbResult:
    """Compare arm B with arm A on ``metric`` and pick the winner (see the module docstring)."""
    if a.variant != "A" or b.variant != "B":
        raise ValueError(f"expected arms A and B, got {a.variant!r} and {b.variant!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")

    z = _z_score(a, b)
    p_value = math.erfc(abs(z) / math.sqrt(2.0))
    confidence = _confidence(a, b, p_value)

    if a.sent == 0 or b.sent == 0:
        if a.sent == b.sent == 0:
            reason = "Neither arm has any sends yet: A is kept."
        else:
            reason = f"{'A' if a.sent == 0 else 'B'} has no sends yet: A is kept."
        return AbResult(metric, a, b, "A", True, 0.0, z, p_value, confidence, reason)
    if a.rate == b.rate:
        reason = f"Tied at {_pct(a.rate)} {metric} rate: A is kept"
        reason += f" ({_low_note(a, b)})." if confidence == "low" else "."
        return AbResult(metric, a, b, "A", True, 0.0, z, p_value, confidence, reason)

    win, other = (b, a) if b.rate > a.rate else (a, b)
    if other.rate > 0:
        lift = (win.rate - other.rate) / other.rate
        lift_text = f"lift {_pct(lift)}"
    else:  # no relative lift over nothing: the plain difference
        lift = win.rate - other.rate
        lift_text = f"lift {lift * 100:.1f} points over 0%"
    p_text = "p < 0.001" if p_value < 0.001 else f"p = {p_value:.3f}"
    reason = (
        f"{win.variant}'s {metric} rate {_pct(win.rate)} beats {other.variant}'s "
        f"{_pct(other.rate)} ({lift_text}, {p_text}): {confidence} confidence"
    )
    reason += f", {_low_note(a, b)}." if confidence == "low" else "."
    return AbResult(metric, a, b, win.variant, False, lift, z, p_value, confidence, reason)


def _z_score(a: Arm, b: Arm) -> float:
    """Pooled two-proportion z statistic of B against A; 0.0 when it is undefined."""
    if a.sent == 0 or b.sent == 0:
        return 0.0
    pooled = (a.conversions + b.conversions) / (a.sent + b.sent)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / a.sent + 1.0 / b.sent))
    if se == 0.0:
        return 0.0
    return (b.rate - a.rate) / se


def _confidence(a: Arm, b: Arm, p_value: float) -> str:
    if a.sent < MIN_SENDS or b.sent < MIN_SENDS:
        return "low"
    return "high" if p_value < SIGNIFICANCE else "medium"


def _low_note(a: Arm, b: Arm) -> str:
    small = [arm.variant for arm in (a, b) if arm.sent < MIN_SENDS]
    where = "each arm" if len(small) == 2 else small[0]
    return f"fewer than {MIN_SENDS} emails were sent in {where}"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"
