from django.apps import AppConfig
from django.core.signals import request_finished


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from attest.registry import register_serving_hook
        from attest_core.normalise import prepare as prepare_normaliser
        from verification.engine.injection import prepare as prepare_injection_scan
        from verification.pipeline.pages import trim_after_large_pages

        # Tables built from every code point, before the first request (not at import).
        register_serving_hook(prepare_normaliser)
        register_serving_hook(prepare_injection_scan)
        request_finished.connect(trim_after_large_pages, dispatch_uid="verification.trim")
