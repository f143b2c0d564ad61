from django.apps import AppConfig
from django.db.models.signals import post_migrate

AUDITORS_GROUP = "auditors"


def ensure_auditors_group(sender=None, using="default", **kwargs) -> None:
    """Keep the auditors group holding every view permission and nothing else.

    Runs after each migrate, when Django has created the permissions of new models,
    so a model added later is visible to auditors without a manual step.
    """
    from django.contrib.auth.models import Group, Permission

    group, _ = Group.objects.using(using).get_or_create(name=AUDITORS_GROUP)
    group.permissions.set(Permission.objects.using(using).filter(codename__startswith="view_"))


class AttestConfig(AppConfig):
    name = "attest"
    verbose_name = "Attest"

    def ready(self) -> None:
        post_migrate.connect(ensure_auditors_group, dispatch_uid="attest.auditors_group")
