"""x402 offers, payment verification and settlement, the trial budget and charges."""
