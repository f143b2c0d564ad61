from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from verification import receivers  # noqa: F401 - connects billing's signals
