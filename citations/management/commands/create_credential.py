"""Add a credential to an existing project and print it (once) as the last line."""

from django.core.management.base import BaseCommand, CommandError

from citations.models import Project
from citations.services import credential_create


class Command(BaseCommand):
    help = "Add a credential to a project; it is printed once, as the last line."

    def add_arguments(self, parser):
        parser.add_argument("project", help="the project's name (or numeric id)")
        parser.add_argument("--label", default="", help="a note to tell credentials apart")

    def handle(self, *args, project: str, label: str, **options):
        found = Project.objects.filter(name=project).first()
        if found is None and project.isdigit():
            found = Project.objects.filter(pk=int(project)).first()
        if found is None:
            raise CommandError(f"No project named {project!r}.")
        credential, token = credential_create(project=found, label=label)
        self.stdout.write(f"Added credential {credential.prefix} to project {found.name}.")
        self.stdout.write("It is shown only this once:")
        self.stdout.write(token)
