"""Receipt signing keys, signed receipts, /v1/receipt/verify and the JWKS."""
