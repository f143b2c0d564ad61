"""The answer-recorder hook: one recorder per route, called by route, nothing for others."""

from __future__ import annotations

import pytest

from billing import recorders
from billing.decorators import priced
from verification.pipeline.records import PAID_ANSWERS


class Notes:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def withheld(self, *, route, request_id, status_code, code) -> None:
        self.calls.append(("withheld", route, request_id, status_code, code))

    def delivered(self, *, route, request_id) -> None:
        self.calls.append(("delivered", route, request_id))


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(recorders, "_RECORDERS", {})


def test_the_named_recorder_hears_about_its_routes_answers_only(clean_registry):
    notes = Notes()
    recorders.register_recorder("fetch", notes)
    recorders.answer_withheld(route="fetch", request_id="r1", status_code=402, code="x")
    recorders.answer_delivered(route="fetch", request_id="r1")
    recorders.answer_withheld(route="verify/quote", request_id="r2", status_code=503, code="y")
    assert notes.calls == [("withheld", "fetch", "r1", 402, "x"), ("delivered", "fetch", "r1")]


def test_a_route_cannot_have_two_recorders(clean_registry):
    recorders.register_recorder("fetch", Notes())
    with pytest.raises(LookupError):
        recorders.register_recorder("fetch", Notes())


def test_priced_registers_its_recorder(clean_registry):
    notes = Notes()

    @priced("verify/quotes", recorder=notes)
    def handler(view, request):
        raise AssertionError("not called")

    recorders.answer_delivered(route="verify/quotes", request_id="r3")
    assert notes.calls == [("delivered", "verify/quotes", "r3")]


def test_every_verification_route_names_the_verification_record():
    import verification.api.batch_views
    import verification.api.views  # noqa: F401

    for route in ("verify/quote", "verify/quotes", "verify/citations", "fetch"):
        assert recorders._RECORDERS[route] is PAID_ANSWERS
