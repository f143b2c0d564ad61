"""The one exception the client raises for a refusal, carrying the API's error object."""

from __future__ import annotations

from typing import Any


class AttestError(Exception):
    """A call that got no answer: the API's refusal (``status`` and its ``{code, message,
    details}``), or, with ``status`` None, no HTTP answer at all (``code`` "transport") or a
    payment the client could not make (``code`` "payment")."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        details: Any = None,
        request_id: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{status or '-'} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.details = details
        self.request_id = request_id
        self.headers = headers or {}

    def to_dict(self) -> dict[str, Any]:
        """The error as the API writes it, plus the status: what the CLI prints."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            error["details"] = self.details
        return {"status": self.status, "error": error, "request_id": self.request_id}
