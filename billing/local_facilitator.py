"""The built-in facilitator: the SDK's exact-EVM scheme over a ledger kept in the database.

It checks what a token contract would check for an EIP-3009 authorization — the EIP-712
signature (recovered for real by the SDK), the validity window, amount, payee and that the
nonce is unused — treats every payer as funded, and records each settlement as a
``LocalTransfer`` row with a transaction-like hash instead of going on chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from eth_account import Account
from eth_account.messages import encode_typed_data
from x402 import x402FacilitatorSync
from x402.mechanisms.evm.default_assets import find_default_asset
from x402.mechanisms.evm.exact import ExactEvmFacilitatorScheme
from x402.mechanisms.evm.exact.eip3009_utils import ERC20_TRANSFER_EVENT_TOPIC
from x402.mechanisms.evm.types import TransactionReceipt
from x402.mechanisms.evm.utils import get_evm_chain_id

from billing.models import LocalTransfer

# The address the local facilitator reports as its own; it never signs a real transaction.
LOCAL_FACILITATOR_ADDRESS = "0x00000000000000000000000000000000A77e5700"
_FUNDED_BALANCE = 10**30
_BIGINT_MAX = 2**63 - 1
# What a token contract answers for a reused authorization; the SDK maps it to nonce_already_used.
_NONCE_USED = "execution reverted: FiatTokenV2: authorization is used or canceled"


def _hex(value: bytes | str) -> str:
    return value.lower() if isinstance(value, str) else "0x" + value.hex()


def _address_topic(address: str) -> str:
    return "0x" + address.lower().removeprefix("0x").rjust(64, "0")


class LedgerSigner:
    """A FacilitatorEvmSigner whose "chain" is the LocalTransfer table."""

    def __init__(self, network: str) -> None:
        self.network = network
        self.chain_id = get_evm_chain_id(network)

    # --- what the SDK asks of a facilitator signer -------------------------------

    def get_addresses(self) -> list[str]:
        return [LOCAL_FACILITATOR_ADDRESS]

    def get_chain_id(self) -> int:
        return self.chain_id

    def get_code(self, address: str) -> bytes:
        # Known stablecoins are contracts; every payer is a plain account (ecrecover path).
        return b"\x60\x80" if find_default_asset(address, self.network) else b""

    def get_balance(self, address: str, token_address: str) -> int:
        return _FUNDED_BALANCE

    def verify_typed_data(
        self,
        address: str,
        domain: Any,
        types: dict[str, Any],
        primary_type: str,
        message: dict[str, Any],
        signature: bytes,
    ) -> bool:
        domain_data = domain if isinstance(domain, dict) else vars(domain)
        plain_types = {
            name: [field if isinstance(field, dict) else vars(field) for field in fields]
            for name, fields in types.items()
            if name != "EIP712Domain"
        }
        signable = encode_typed_data(
            domain_data=domain_data, message_types=plain_types, message_data=message
        )
        recovered = Account.recover_message(signable, signature=signature)
        return recovered.lower() == address.lower()

    def read_contract(self, address: str, abi: list[dict], function_name: str, *args: Any) -> Any:
        if function_name == "transferWithAuthorization":
            # Simulation: the transfer would revert only on a used nonce (everyone is funded).
            payer, nonce = args[0], args[5]
            if self._used(address, payer, nonce):
                raise RuntimeError(_NONCE_USED)
            return None
        if function_name == "authorizationState":
            return self._used(address, args[0], args[1])
        if function_name == "balanceOf":
            return _FUNDED_BALANCE
        # As a mapping: the SDK's TypedDict takes only literal keys.
        asset: Mapping[str, object] | None = find_default_asset(address, self.network)
        if asset and function_name in {"name", "version", "decimals"}:
            return asset[function_name]
        raise NotImplementedError(f"The local facilitator cannot read {function_name}.")

    def write_contract(
        self,
        address: str,
        abi: list[dict],
        function_name: str,
        *args: Any,
        data_suffix: str | None = None,
    ) -> str:
        if function_name != "transferWithAuthorization":
            raise NotImplementedError(f"The local facilitator cannot call {function_name}.")
        payer, pay_to, value, valid_after, valid_before, nonce = args[:6]
        nonce_hex = _hex(nonce)
        digest = hashlib.sha256(
            f"{self.chain_id}:{address.lower()}:{payer.lower()}:{nonce_hex}".encode()
        ).hexdigest()
        transfer = {
            "transaction": "0x" + digest,
            "token": address.lower(),
            "payer": payer.lower(),
            "pay_to": pay_to.lower(),
            "value": str(value),
            "nonce": nonce_hex,
            # uint256 on chain; the ledger's columns stop at 2**63 ("valid until forever").
            "valid_after": min(int(valid_after), _BIGINT_MAX),
            "valid_before": min(int(valid_before), _BIGINT_MAX),
        }
        if not self._record(transfer):
            raise RuntimeError(_NONCE_USED)
        return transfer["transaction"]

    def send_transaction(self, to: str, data: bytes) -> str:
        raise NotImplementedError("The local facilitator deploys no smart wallets.")

    def wait_for_transaction_receipt(self, tx_hash: str) -> TransactionReceipt:
        transfer = self._fetch(tx_hash)
        transfer_log = {
            "address": transfer["token"],
            "topics": [
                ERC20_TRANSFER_EVENT_TOPIC,
                _address_topic(transfer["payer"]),
                _address_topic(transfer["pay_to"]),
            ],
            "data": "0x" + int(transfer["value"]).to_bytes(32, "big").hex(),
        }
        return TransactionReceipt(
            status=1, block_number=transfer["block"], tx_hash=tx_hash, logs=[transfer_log]
        )

    # --- the ledger: the only methods that touch storage -----------------------------

    def _used(self, token: str, payer: str, nonce: bytes | str) -> bool:
        return LocalTransfer.objects.filter(
            chain_id=self.chain_id, token=token.lower(), payer=payer.lower(), nonce=_hex(nonce)
        ).exists()

    def _record(self, transfer: dict[str, Any]) -> bool:
        """Store a transfer; False if its authorization was already used."""
        try:
            with transaction.atomic():
                LocalTransfer.objects.create(chain_id=self.chain_id, **transfer)
        except IntegrityError:
            return False
        return True

    def _fetch(self, tx_hash: str) -> dict[str, Any]:
        row = LocalTransfer.objects.get(transaction=tx_hash)
        return {
            "token": row.token,
            "payer": row.payer,
            "pay_to": row.pay_to,
            "value": row.value,
            "block": row.pk,
        }


def build_local_facilitator(network: str) -> x402FacilitatorSync:
    """The SDK's facilitator with the exact-EVM scheme for ``network``, settling into the ledger."""
    facilitator = x402FacilitatorSync()
    facilitator.register([network], ExactEvmFacilitatorScheme(LedgerSigner(network)))
    return facilitator
