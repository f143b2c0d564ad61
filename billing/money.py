"""Amounts as people read them: atomic token units turned into the token's own units."""

from __future__ import annotations


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
