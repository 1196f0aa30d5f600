"""Hypothesis profiles for the protocol tests: ``default`` keeps ``make
test`` short on a shared 2-core machine; ``KAVKA_HYPOTHESIS=thorough`` for
deeper local runs."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=12, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough", max_examples=300, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("KAVKA_HYPOTHESIS", "default"))
