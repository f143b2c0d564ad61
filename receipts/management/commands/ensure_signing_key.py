"""Make sure a receipt key can sign, creating a development key in the key directory if none."""

from django.core.management.base import BaseCommand, CommandError

from receipts import services
from receipts.keyring import KeyConfigError


class Command(BaseCommand):
    help = "Create an Ed25519 receipt signing key under ATTEST_SIGNING_KEYS if none can sign."

    def handle(self, *args, **options):
        try:
            entry, created = services.signing_key_ensure()
        except KeyConfigError as exc:
            raise CommandError(str(exc)) from exc
        verb = "created" if created else "is active"
        self.stdout.write(f"Signing key {entry.kid} {verb} ({entry.origin}).")
