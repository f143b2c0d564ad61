"""Create a new receipt signing key and make it active; older keys keep verifying."""

from django.core.management.base import BaseCommand, CommandError

from receipts import services
from receipts.keyring import KeyConfigError


class Command(BaseCommand):
    help = (
        "Create a new Ed25519 signing key in the key directory and make it active. Older keys "
        "stay in the JWKS (public half only) so their receipts keep verifying."
    )

    def handle(self, *args, **options):
        try:
            active, retired = services.signing_key_rotate()
        except KeyConfigError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Active signing key: {active.kid}")
        for entry in retired:
            self.stdout.write(f"Retired (verify only): {entry.kid}")
