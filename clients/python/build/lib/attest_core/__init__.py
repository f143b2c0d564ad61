"""What the service and its client share, pure: canonical JSON, receipt payloads and JWS
checks, the offline receipt checks, and the text normaliser and passage finder whose rules
a receipt's offsets are checked against. No Django, no I/O."""
