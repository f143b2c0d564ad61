from django.apps import AppConfig
from django.core.signals import request_finished


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from verification.pipeline.pages import trim_after_large_pages

        request_finished.connect(trim_after_large_pages, dispatch_uid="verification.trim")
