"""Amounts as people read them: atomic token units turned into the token's own units, and
prepaid credit's micro-USD (1 USD = 1,000,000, USDC's atomic unit) as dollars."""

from __future__ import annotations

from decimal import Decimal

MICROS_PER_USD = 1_000_000


def usd_micros(usd: str | Decimal) -> int:
    """Micro-USD of "$0.01", "0.01" or a Decimal; exact, or ValueError."""
    value = Decimal(str(usd).lstrip("$")) * MICROS_PER_USD
    if value != value.to_integral_value():
        raise ValueError(f"{usd} is finer than a micro-dollar")
    return int(value)


def usd_text(micros: int) -> str:
    """ "4.99" for 4,990,000: at least cents, every digit a balance has after them."""
    text = f"{Decimal(micros) / MICROS_PER_USD:.6f}".rstrip("0")
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


def token_amount(atomic: str | int, *, network: str, asset: str) -> str:
    """ "0.01 USDC" for 10000 atomic units of USDC; the raw figure, said so, for an unknown
    asset or a value that is not a whole number (nothing is guessed)."""
    # The EVM half of the SDK (eth_account, web3) takes a second or more to import: load it
    # when an amount is first rendered, not with every management command.
    from x402.mechanisms.evm.default_assets import find_default_asset
    from x402.mechanisms.evm.utils import format_amount

    info = find_default_asset(asset, network) if asset else None
    try:
        units = int(atomic)
    except (TypeError, ValueError):
        return f"{atomic} (not a number of atomic units)"
    if info is None:
        return f"{units:,} atomic units of {asset or 'an unknown asset'}"
    return f"{format_amount(units, info['decimals'])} {info['symbol']}"
