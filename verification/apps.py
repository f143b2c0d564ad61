from django.apps import AppConfig
from django.core.signals import request_finished


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from attest.registry import register_serving_hook
        from attest_core.normalise import prepare
        from verification.pipeline.pages import trim_after_large_pages

        register_serving_hook(prepare)  # the normaliser's tables, before the first request
        request_finished.connect(trim_after_large_pages, dispatch_uid="verification.trim")
