"""Billing's pure core: values in, values out, no Django and no I/O."""
