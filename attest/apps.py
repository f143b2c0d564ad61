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
        from attest.lazyviews import load_views
        from attest.registry import register_serving_hook

        post_migrate.connect(ensure_auditors_group, dispatch_uid="attest.auditors_group")
        # The URLconf names its API views by path (attest.lazyviews), so a manage.py command
        # does not import them; a serving process imports them all before its first request.
        register_serving_hook(load_views)
