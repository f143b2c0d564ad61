"""What billing tells the apps whose views it prices about answers they produced.

A priced view records its work before billing knows whether the answer will be paid for
and delivered. These signals let it correct that record: ``paid_answer_withheld`` when
settlement failed or is still pending (the answer did not leave), ``paid_answer_delivered``
when a later retry reconciled the settlement and the stored answer went out after all.
Both carry ``route`` and the ``request_id`` of the request whose view did the work.
"""

from __future__ import annotations

from django.dispatch import Signal

# kwargs: route, request_id, status_code, code (the error code the caller was given)
paid_answer_withheld = Signal()
# kwargs: route, request_id
paid_answer_delivered = Signal()
