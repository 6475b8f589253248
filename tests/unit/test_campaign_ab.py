"""services.campaigns._ab_test: A/B assignment by hash, and the pooled two-proportion z-test.

Every expected figure below is worked out by hand in the comments (rates are fractions;
p = pooled rate, se = sqrt(p (1 - p) (1/na + 1/nb)), z = (rate_b - rate_a) / se,
p-value = erfc(|z| / sqrt 2)).
"""

from __future__ import annotations

import math

import pytest

from mailbridge.services.campaigns._ab_test import AbResult, Arm, decide, variant_of


def _decide(a: tuple[int, int], b: tuple[int, int], metric: str = "open") -> AbResult:
    return decide(Arm("A", *a), Arm("B", *b), metric)


# --- decide: hand-computed tables -----------------------------------------------------------


def test_b_wins_with_high_confidence() -> None:
    # A 200 sent / 40 → 0.20; B 200 / 60 → 0.30
    # p  = (40 + 60) / (200 + 200) = 100 / 400 = 0.25
    # se = sqrt(0.25 * 0.75 * (1/200 + 1/200)) = sqrt(0.1875 * 0.01) = sqrt(0.001875) = 0.0433013
    # z  = (0.30 - 0.20) / 0.0433013 = 2.309401
    # p-value = erfc(2.309401 / 1.414214) = erfc(1.632993) ≈ 0.020921   (< 0.05, both ≥ 20 → high)
    # lift = (0.30 - 0.20) / 0.20 = 0.5
    r = _decide((200, 40), (200, 60))
    assert r.a.rate == pytest.approx(0.20)
    assert r.b.rate == pytest.approx(0.30)
    assert r.z_score == pytest.approx(2.309401, abs=1e-6)
    assert r.p_value == pytest.approx(0.020921, abs=1e-6)
    assert r.winner == "B"
    assert r.fallback is False
    assert r.lift == pytest.approx(0.5)
    assert r.confidence == "high"
    assert r.metric == "open"
    assert r.reason == (
        "B's open rate 30.0% beats A's 20.0% (lift 50.0%, p = 0.021): high confidence."
    )


def test_a_wins_z_negative_lift_from_a() -> None:
    # A 100 / 30 → 0.30; B 100 / 15 → 0.15
    # p  = 45 / 200 = 0.225
    # se = sqrt(0.225 * 0.775 * (1/100 + 1/100)) = sqrt(0.174375 * 0.02) = sqrt(0.0034875)
    #    = 0.0590551
    # z  = (0.15 - 0.30) / 0.0590551 = -2.540003             (B against A: negative)
    # p-value = erfc(2.540003 / 1.414214) = erfc(1.796053) ≈ 0.011085   → high
    # lift = (0.30 - 0.15) / 0.15 = 1.0                      (winner A over B)
    r = _decide((100, 30), (100, 15), "click")
    assert r.z_score == pytest.approx(-2.540003, abs=1e-6)
    assert r.p_value == pytest.approx(0.011085, abs=1e-6)
    assert r.winner == "A"
    assert r.fallback is False
    assert r.lift == pytest.approx(1.0)
    assert r.confidence == "high"
    assert r.reason == (
        "A's click rate 30.0% beats B's 15.0% (lift 100.0%, p = 0.011): high confidence."
    )


def test_tie_falls_back_to_a() -> None:
    # A 100 / 20 → 0.20; B 100 / 20 → 0.20
    # z = (0.20 - 0.20) / se = 0 → p-value = erfc(0) = 1.0 → medium (both ≥ 20, p ≥ 0.05)
    # tie → fallback, winner A, lift 0
    r = _decide((100, 20), (100, 20))
    assert r.z_score == 0.0
    assert r.p_value == pytest.approx(1.0)
    assert r.winner == "A"
    assert r.fallback is True
    assert r.lift == 0.0
    assert r.confidence == "medium"
    assert r.reason == "Tied at 20.0% open rate: A is kept."


def test_tie_with_few_sends_is_low_and_says_so() -> None:
    # A 10 / 1 → 0.10; B 10 / 1 → 0.10: tie, and both arms < 20 sends → low
    r = _decide((10, 1), (10, 1), "reply")
    assert (r.winner, r.fallback, r.lift, r.z_score, r.p_value) == ("A", True, 0.0, 0.0, 1.0)
    assert r.confidence == "low"
    assert r.reason == (
        "Tied at 10.0% reply rate: A is kept (fewer than 20 emails were sent in each arm)."
    )


@pytest.mark.parametrize(
    ("a", "b", "reason"),
    [
        ((100, 20), (0, 0), "B has no sends yet: A is kept."),
        ((0, 0), (100, 30), "A has no sends yet: A is kept."),
        ((0, 0), (0, 0), "Neither arm has any sends yet: A is kept."),
    ],
)
def test_zero_arm_falls_back_to_a_with_low_confidence(
    a: tuple[int, int], b: tuple[int, int], reason: str
) -> None:
    # an arm with 0 sends: no z-test (z = 0, p = 1), fallback to A, lift 0, 0 < 20 sends → low
    r = _decide(a, b)
    assert r.z_score == 0.0
    assert r.p_value == 1.0
    assert r.winner == "A"
    assert r.fallback is True
    assert r.lift == 0.0
    assert r.confidence == "low"
    assert r.reason == reason


def test_other_rate_zero_lift_is_plain_difference() -> None:
    # A 50 / 0 → 0.00; B 50 / 5 → 0.10
    # p  = 5 / 100 = 0.05
    # se = sqrt(0.05 * 0.95 * (1/50 + 1/50)) = sqrt(0.0475 * 0.04) = sqrt(0.0019) = 0.0435890
    # z  = (0.10 - 0.00) / 0.0435890 = 2.294157
    # p-value = erfc(2.294157 / 1.414214) = erfc(1.622214) ≈ 0.021781   → high
    # lift: A's rate is 0 → plain difference 0.10 - 0.00 = 0.1
    r = _decide((50, 0), (50, 5))
    assert r.z_score == pytest.approx(2.294157, abs=1e-6)
    assert r.p_value == pytest.approx(0.021781, abs=1e-6)
    assert r.winner == "B"
    assert r.fallback is False
    assert r.lift == pytest.approx(0.1)
    assert r.confidence == "high"
    assert "lift 10.0 points over 0%" in r.reason


def test_medium_enough_sends_not_significant() -> None:
    # A 100 / 20 → 0.20; B 100 / 25 → 0.25
    # p  = 45 / 200 = 0.225
    # se = sqrt(0.225 * 0.775 * 0.02) = sqrt(0.0034875) = 0.0590551
    # z  = (0.25 - 0.20) / 0.0590551 = 0.846668
    # p-value = erfc(0.846668 / 1.414214) = erfc(0.598685) ≈ 0.397180   (≥ 0.05 → medium)
    # lift = (0.25 - 0.20) / 0.20 = 0.25
    r = _decide((100, 20), (100, 25))
    assert r.z_score == pytest.approx(0.846668, abs=1e-6)
    assert r.p_value == pytest.approx(0.397180, abs=1e-6)
    assert r.winner == "B"
    assert r.lift == pytest.approx(0.25)
    assert r.confidence == "medium"
    assert r.reason.endswith("(lift 25.0%, p = 0.397): medium confidence.")


def test_low_few_sends() -> None:
    # A 10 / 2 → 0.20; B 10 / 5 → 0.50
    # p  = 7 / 20 = 0.35
    # se = sqrt(0.35 * 0.65 * (1/10 + 1/10)) = sqrt(0.2275 * 0.2) = sqrt(0.0455) = 0.2133073
    # z  = (0.50 - 0.20) / 0.2133073 = 1.406422
    # p-value = erfc(1.406422 / 1.414214) = erfc(0.994491) ≈ 0.159599   (both arms < 20 → low)
    # lift = (0.50 - 0.20) / 0.20 = 1.5
    r = _decide((10, 2), (10, 5))
    assert r.z_score == pytest.approx(1.406422, abs=1e-6)
    assert r.p_value == pytest.approx(0.159599, abs=1e-6)
    assert r.winner == "B"
    assert r.lift == pytest.approx(1.5)
    assert r.confidence == "low"
    assert "fewer than 20 emails were sent in each arm" in r.reason


def test_low_beats_significance() -> None:
    # A 15 / 0 → 0.00; B 15 / 10 → 0.666667
    # p  = 10 / 30 = 1/3
    # se = sqrt(1/3 * 2/3 * (1/15 + 1/15)) = sqrt(2/9 * 2/15) = sqrt(4/135) = 0.1721326
    # z  = 0.666667 / 0.1721326 = 3.872983
    # p-value = erfc(3.872983 / 1.414214) = erfc(2.738613) ≈ 0.000108   (< 0.05 but 15 < 20 → low)
    # lift: A's rate is 0 → plain difference 0.666667
    r = _decide((15, 0), (15, 10))
    assert r.z_score == pytest.approx(3.872983, abs=1e-6)
    assert r.p_value == pytest.approx(0.000108, abs=1e-6)
    assert r.lift == pytest.approx(2 / 3)
    assert r.confidence == "low"
    assert "p < 0.001" in r.reason


def test_low_names_the_small_arm() -> None:
    # A 19 / 5 → 0.263158; B 20 / 5 → 0.25
    # p  = 10 / 39 = 0.256410
    # se = sqrt(0.256410 * 0.743590 * (1/19 + 1/20)) = sqrt(0.190664 * 0.102632) = sqrt(0.019568)
    #    = 0.139886
    # z  = (0.25 - 0.263158) / 0.139886 = -0.094061
    # lift = (0.263158 - 0.25) / 0.25 = 0.052632                    (A has 19 < 20 → low)
    r = _decide((19, 5), (20, 5))
    assert r.z_score == pytest.approx(-0.094061, abs=1e-6)
    assert r.winner == "A"
    assert r.lift == pytest.approx(0.052632, abs=1e-6)
    assert r.confidence == "low"
    assert r.reason.endswith("low confidence, fewer than 20 emails were sent in A.")


def test_twenty_sends_each_is_not_low() -> None:
    # A 20 / 2 → 0.10; B 20 / 4 → 0.20: p = 6/40 = 0.15,
    # se = sqrt(0.15 * 0.85 * 0.1) = sqrt(0.01275) = 0.112916, z = 0.10 / 0.112916 = 0.885615,
    # p-value ≈ 0.375825 → medium (exactly 20 sends is enough)
    r = _decide((20, 2), (20, 4))
    assert r.z_score == pytest.approx(0.885615, abs=1e-6)
    assert r.confidence == "medium"


def test_arm_rate() -> None:
    assert Arm("A", 0, 0).rate == 0.0
    assert Arm("A", 8, 2).rate == pytest.approx(0.25)


@pytest.mark.parametrize(("sent", "conversions"), [(-1, 0), (0, -1), (5, 6)])
def test_arm_rejects_impossible_counts(sent: int, conversions: int) -> None:
    with pytest.raises(ValueError):
        Arm("A", sent, conversions)


def test_decide_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="metric"):
        _decide((10, 1), (10, 1), "bounce")
    with pytest.raises(ValueError, match="arms A and B"):
        decide(Arm("B", 10, 1), Arm("A", 10, 1), "open")


# --- as_json --------------------------------------------------------------------------------


def test_as_json_shape_and_rounding() -> None:
    out = _decide((15, 0), (15, 10)).as_json("cmp_123")
    assert list(out) == [
        "object",
        "campaign_id",
        "metric",
        "a",
        "b",
        "winner",
        "fallback",
        "lift",
        "zScore",
        "pValue",
        "confidence",
        "reason",
    ]
    assert out["object"] == "campaign_ab"
    assert out["campaign_id"] == "cmp_123"
    assert out["metric"] == "open"
    assert out["a"] == {"variant": "A", "sent": 15, "conversions": 0, "rate": 0.0}
    assert out["b"] == {"variant": "B", "sent": 15, "conversions": 10, "rate": 0.666667}
    for arm in (out["a"], out["b"]):
        assert isinstance(arm, dict)
        assert list(arm) == ["variant", "sent", "conversions", "rate"]
        assert type(arm["sent"]) is int
        assert type(arm["conversions"]) is int
        assert type(arm["rate"]) is float
    assert out["winner"] == "B"
    assert out["fallback"] is False
    assert out["lift"] == 0.666667
    assert out["zScore"] == 3.872983
    assert out["pValue"] == 0.000108
    for key in ("lift", "zScore", "pValue"):
        assert type(out[key]) is float
    assert out["confidence"] == "low"
    assert isinstance(out["reason"], str)


def test_as_json_fallback_types() -> None:
    out = _decide((100, 20), (0, 0)).as_json("c")
    assert out["fallback"] is True
    assert out["winner"] == "A"
    assert (out["lift"], out["zScore"], out["pValue"]) == (0.0, 0.0, 1.0)
    for key in ("lift", "zScore", "pValue"):
        assert type(out[key]) is float
    assert out["b"] == {"variant": "B", "sent": 0, "conversions": 0, "rate": 0.0}


# --- variant_of -----------------------------------------------------------------------------


def test_variant_of_is_deterministic_and_process_independent() -> None:
    # fixed sha256-derived answers: would change run to run if Python's salted hash() were used
    assert [variant_of("cmp_1", f"ct_{i}", 0.5) for i in range(6)] == [
        None,
        None,
        "B",
        None,
        "A",
        None,
    ]
    assert [variant_of("cmp_2", f"ct_{i}", 1.0) for i in range(6)] == ["A", "B", "B", "B", "B", "B"]
    assert variant_of("cmp_9", "ct_x", 0.3) == variant_of("cmp_9", "ct_x", 0.3)


def test_variant_of_extremes() -> None:
    ids = [f"contact_{i}" for i in range(2000)]
    assert all(variant_of("cmp", c, 1.0) in ("A", "B") for c in ids)
    assert all(variant_of("cmp", c, 0.0) is None for c in ids)


def test_variant_of_is_nested_across_fractions() -> None:
    # raising the fraction only adds contacts to the test; nobody switches arm
    for i in range(1000):
        small, large = variant_of("cmp", f"c{i}", 0.1), variant_of("cmp", f"c{i}", 0.4)
        if small is not None:
            assert large == small


def test_variant_of_distribution() -> None:
    got = [variant_of("cmp_dist", f"contact_{i}", 0.2) for i in range(10_000)]
    a, b = got.count("A"), got.count("B")
    assert 0.18 <= (a + b) / 10_000 <= 0.22
    assert 0.45 <= a / (a + b) <= 0.55
    assert 0.45 <= b / (a + b) <= 0.55


@pytest.mark.parametrize("fraction", [-0.1, 1.5, math.nan])
def test_variant_of_rejects_bad_fraction(fraction: float) -> None:
    with pytest.raises(ValueError, match="test_fraction"):
        variant_of("cmp", "ct", fraction)
