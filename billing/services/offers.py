"""The 402 offer, and the counted ledger rows that offers and refused payments leave."""

from __future__ import annotations

from django.conf import settings
from django.db.models import F
from django.utils import timezone
from x402 import PaymentRequirements, ResourceInfo
from x402.http import encode_payment_required_header

from billing.discovery import route_discovery
from billing.exceptions import PaymentRequiredError
from billing.facilitators import resource_config, resource_server
from billing.models import Offer, Refusal
from billing.pricing import PricedRoute
from billing.services.payment_ids import payment_id_declaration
from billing.trial import trial_bucket
from billing.unpaid import count_refused_payment

REASON_MAX_CHARS = Refusal._meta.get_field("reason").max_length


def route_requirement(route: PricedRoute) -> PaymentRequirements:
    """The one requirement this server accepts for ``route``, built from its own settings."""
    return resource_server().build_payment_requirements(resource_config(price=route.price))[0]


def _count(
    model: type[Offer] | type[Refusal], *, request_id: str, defaults: dict, **keys: str
) -> None:
    """Add one to this minute's row for ``keys``, creating it on the minute's first call."""
    minute = timezone.now().replace(second=0, microsecond=0)
    row, created = model.objects.get_or_create(
        minute=minute, **keys, defaults={**defaults, "last_request_id": request_id}
    )
    if not created:
        model.objects.filter(pk=row.pk).update(count=F("count") + 1, last_request_id=request_id)


def offer_error(
    *,
    route: PricedRoute,
    reason: str,
    client_ip: str,
    request_id: str,
    message: str | None = None,
    record: bool = True,
    **extra: object,
) -> PaymentRequiredError:
    """Build the 402 for ``route`` (counted in the Offer ledger unless ``record`` is off)."""
    requirement = route_requirement(route)
    offer = resource_server().create_payment_required_response(
        [requirement],
        ResourceInfo(
            url=f"{settings.ATTEST_PUBLIC_URL.rstrip('/')}/v1/{route.name}",
            description=route.description,
            mime_type="application/json",
        ),
        reason,
        extensions={**route_discovery(route), **payment_id_declaration()},
    )
    if record:
        _count(
            Offer,
            request_id=request_id,
            route=route.name,
            reason=reason,
            caller=trial_bucket(client_ip),
            defaults={
                "network": requirement.network,
                "asset": requirement.asset,
                "amount": requirement.amount,
                "pay_to": requirement.pay_to,
            },
        )
    return PaymentRequiredError(
        message,
        reason=reason,
        offer=offer.model_dump(mode="json", by_alias=True, exclude_none=True),
        header=encode_payment_required_header(offer),
        **extra,
    )


def refusal_error(
    *,
    route: PricedRoute,
    reason: str,
    client_ip: str,
    request_id: str,
    payer: str = "",
    message: str | None = None,
) -> PaymentRequiredError:
    """A refused payment: one counted Refusal row and the offer to pay properly.

    A refused payment bought nothing, so it counts as an unpaid request: past the unpaid
    limit this raises ``RateLimited`` instead.
    """
    count_refused_payment(client_ip)
    # Reasons may come from a facilitator, in any length; the ledger's columns have one.
    reason = reason[:REASON_MAX_CHARS]
    _count(
        Refusal,
        request_id=request_id,
        route=route.name,
        reason=reason,
        payer=payer.lower(),
        caller=trial_bucket(client_ip),
        defaults={"network": settings.X402_NETWORK},
    )
    return offer_error(
        route=route,
        reason=reason,
        client_ip=client_ip,
        request_id=request_id,
        message=message,
        record=False,
    )
