"""Shared by every tier."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Tests never read the developer's own settings.
for _name in list(os.environ):
    if _name.startswith("MAILBRIDGE_"):
        del os.environ[_name]

# Hypothesis times each example on the wall clock (a 200 ms deadline by default, and the
# too_slow health check on generating them): on a busy machine that fails correct tests.
# What a property test checks is the property, not how fast one example ran.
settings.register_profile("mailbridge", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mailbridge")
