"""Make a staff user who is not a superuser: they open the admin and see what their groups allow."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Create a staff user who is not a superuser, or make an existing user staff; "
        "they open the admin and see what their groups allow (make_auditor: every page, "
        "no change)."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="the staff user's username")
        parser.add_argument("--email", default="", help="the new user's email address")

    def handle(self, *args, username: str, email: str, **options):
        users = get_user_model()._default_manager
        user = users.filter(username=username).first()
        then = f"manage.py make_auditor {username} lets them read every admin page."
        if user is None:
            # No password is asked here, so none is taken from a command line or the
            # environment: the new user has an unusable one until changepassword sets it.
            users.create_user(username=username, email=email, is_staff=True)
            self.stdout.write(
                f"{username} is now a staff user (not a superuser) with no password yet: "
                f"set one with manage.py changepassword {username}. {then}"
            )
            return
        if user.is_superuser:
            raise CommandError(
                f"{username} is a superuser, and this command never takes that away: "
                "choose another username for a staff user who is not a superuser."
            )
        if user.is_staff:
            self.stdout.write(f"{username} is already a staff user; nothing changed. {then}")
            return
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        self.stdout.write(f"{username} is now a staff user (not a superuser). {then}")
