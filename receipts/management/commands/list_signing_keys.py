"""List the receipt keys with their state; public material only."""

import json

from django.core.management.base import BaseCommand, CommandError

from receipts import selectors
from receipts.keyring import KeyConfigError


class Command(BaseCommand):
    help = "List the receipt signing keys (kid, state, whether this host can sign, created)."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="one JSON object per key")

    def handle(self, *args, **options):
        try:
            ring = selectors.signing_keyring()
        except KeyConfigError as exc:
            raise CommandError(str(exc)) from exc
        for entry in ring.entries:
            created = entry.created.isoformat() if entry.created else None
            if options["json"]:
                row = {
                    "kid": entry.kid,
                    "state": entry.state,
                    "can_sign": entry.can_sign,
                    "created": created,
                    "origin": entry.origin,
                }
                self.stdout.write(json.dumps(row))
            else:
                signs = "private" if entry.can_sign else "public-only"
                self.stdout.write(f"{entry.kid}  {entry.state:<7}  {signs:<11}  {created or '-'}")
        if not ring.entries and not options["json"]:
            self.stdout.write(f"No keys in {ring.location}; run manage.py ensure_signing_key.")
