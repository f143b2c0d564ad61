"""Put a staff user in the auditors group (or take them out): read everything, change nothing."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from attest.apps import AUDITORS_GROUP, ensure_auditors_group


class Command(BaseCommand):
    help = (
        f"Make a staff user an auditor (the {AUDITORS_GROUP!r} group: every admin page, "
        "no change), or with --remove stop them being one."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="an existing staff user's username")
        parser.add_argument(
            "--remove", action="store_true", help="take the user out of the auditors group"
        )

    def handle(self, *args, username: str, remove: bool, **options):
        from django.contrib.auth.models import Group

        user = get_user_model()._default_manager.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        ensure_auditors_group()  # the group and its view permissions, as after migrate
        group = Group.objects.get(name=AUDITORS_GROUP)
        member = user.groups.filter(pk=group.pk).exists()
        if remove:
            if not member:
                self.stdout.write(f"{username} is not an auditor; nothing changed.")
                return
            user.groups.remove(group)
            self.stdout.write(f"{username} is no longer an auditor.")
            return
        if not user.is_staff:
            raise CommandError(
                f"{username} is not a staff user, so could not open the admin: "
                f"make them staff first (manage.py make_staff {username})."
            )
        if user.is_superuser:
            raise CommandError(
                f"{username} is a superuser: every permission is theirs whatever their "
                "groups, so the auditors group would not stop them changing anything. "
                "Make a staff user who is not a superuser for auditing instead "
                "(manage.py make_staff NAME), then run make_auditor NAME."
            )
        if member:
            self.stdout.write(f"{username} is already an auditor; nothing changed.")
            return
        user.groups.add(group)
        self.stdout.write(f"{username} is now an auditor: every admin page, no change.")
