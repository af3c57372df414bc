"""The status enum reads as the words reports always showed."""

from __future__ import annotations

import json

import pytest

from pytest_ortperf.checks.status import Status
from pytest_ortperf.latency.decision import Verdict


@pytest.mark.parametrize("status", list(Status))
def test_a_status_shows_its_value_in_text_json_and_formatting(status: Status) -> None:
    assert str(status) == status.value
    assert f"{status}" == status.value
    assert f"{status:>30}" == f"{status.value:>30}"
    assert json.dumps({"verdict": status}) == json.dumps({"verdict": status.value})
    assert status == status.value


@pytest.mark.parametrize("verdict", list(Verdict))
def test_every_verdict_has_its_status(verdict: Verdict) -> None:
    assert Status.of(verdict).value == verdict.value
