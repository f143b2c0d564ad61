"""Create a ledger project and print its first credential (once) as the last line."""

from django.core.management.base import BaseCommand, CommandError

from citations.models import Project
from citations.services import project_create


class Command(BaseCommand):
    help = "Create a fact-ledger project; the credential is printed once, as the last line."

    def add_arguments(self, parser):
        parser.add_argument("name", help="a unique project name")

    def handle(self, *args, name: str, **options):
        if Project.objects.filter(name=name).exists():
            raise CommandError(f"A project named {name!r} already exists.")
        project, token = project_create(name=name)
        self.stdout.write(f"Created project {project.name} (id {project.pk}).")
        self.stdout.write("Its credential follows; it is shown only this once:")
        self.stdout.write(token)
