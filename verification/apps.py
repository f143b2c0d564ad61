from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from attest.registry import register_serving_hook
        from attest_core.normalise import prepare

        register_serving_hook(prepare)  # the normaliser's tables, before the first request
