"""The hook through which a priced view's app corrects its own record of an answer.

A priced view records its work before billing knows whether the answer will be paid for
and delivered. The view names a recorder with ``@priced(route, recorder=...)``; billing
then calls its ``withheld`` when settlement failed or is still pending (the answer did not
leave), and its ``delivered`` when a later retry reconciled the settlement and the stored
answer went out after all. A route without a recorder keeps no record to correct.
"""

from __future__ import annotations

from typing import Protocol


class AnswerRecorder(Protocol):
    def withheld(self, *, route: str, request_id: str, status_code: int, code: str) -> None:
        """The answer of ``request_id`` did not leave; ``code`` is the error the caller got."""

    def delivered(self, *, route: str, request_id: str) -> None:
        """The answer of ``request_id`` went out after all, to a retry."""


_RECORDERS: dict[str, AnswerRecorder] = {}


def register_recorder(route_name: str, recorder: AnswerRecorder) -> None:
    """Name the recorder of a route's answers; one route has at most one."""
    known = _RECORDERS.setdefault(route_name, recorder)
    if known is not recorder:
        raise LookupError(f"{route_name!r} already has an answer recorder: {known!r}.")


def answer_withheld(*, route: str, request_id: str, status_code: int, code: str) -> None:
    recorder = _RECORDERS.get(route)
    if recorder is not None:
        recorder.withheld(route=route, request_id=request_id, status_code=status_code, code=code)


def answer_delivered(*, route: str, request_id: str) -> None:
    recorder = _RECORDERS.get(route)
    if recorder is not None:
        recorder.delivered(route=route, request_id=request_id)
