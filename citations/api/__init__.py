"""The api subpackage: the ledger's views and serializers (validate, call one service, render)."""
