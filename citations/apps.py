from django.apps import AppConfig


class CitationsConfig(AppConfig):
    name = "citations"

    def ready(self) -> None:
        from citations import credits

        credits.register()  # billing's balances are kept per project (citations.credits)
