from django.apps import AppConfig
from django.core.signals import request_finished


# Serving hooks that import what they prepare when they run: numpy and the tables' modules
# are a serving process's, not every manage.py command's.
def prepare_normaliser() -> None:
    from attest_core.normalise import prepare

    prepare()


def prepare_injection_scan() -> None:
    from verification.engine.injection import prepare

    prepare()


def trim_after_large_pages(**signal: object) -> None:
    # The pipeline (page fetching, PDF and HTML readers) is imported by the first request
    # that needs it, not by the app's load, which every manage.py command pays.
    from verification.pipeline.pages import trim_after_large_pages as trim

    trim(**signal)


class VerificationConfig(AppConfig):
    name = "verification"

    def ready(self) -> None:
        from attest.registry import register_serving_hook

        # Tables built from every code point, before the first request (not at import).
        register_serving_hook(prepare_normaliser)
        register_serving_hook(prepare_injection_scan)
        request_finished.connect(trim_after_large_pages, dispatch_uid="verification.trim")
