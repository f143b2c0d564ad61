"""The fact ledger: observations, facts with byte-exact evidence, resolve and recall."""
