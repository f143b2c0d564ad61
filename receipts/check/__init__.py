"""The offline receipt checker: ``python -m receipts.check RECEIPT --jwks FILE_OR_URL``."""
