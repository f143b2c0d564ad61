from django.apps import AppConfig


class AttestConfig(AppConfig):
    name = "attest"
    verbose_name = "Attest"
