from django.apps import AppConfig


class CitationsConfig(AppConfig):
    name = "citations"

    def ready(self) -> None:
        from billing.owners import register_owners

        # Billing keeps prepaid balances per project; it reaches projects through this
        # module, imported by name on the first credit call (billing.owners).
        register_owners("citations.credits")
