"""Attest: verification of cited quotes and a bitemporal fact ledger."""
