from django.apps import AppConfig


class ReceiptsConfig(AppConfig):
    name = "receipts"
