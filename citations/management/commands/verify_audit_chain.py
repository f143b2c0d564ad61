"""Recompute each project's audit hash chain and name the first broken link."""

from collections.abc import Iterable

from django.core.management.base import BaseCommand, CommandError

from citations.models import AuditEvent, Project
from citations.services.audit import (
    audit_chain_first_break,
    audit_chain_unlogged,
    audit_head_log,
)


class Command(BaseCommand):
    help = (
        "Check the audit log's hash chain of one project (by name or numeric id) or of "
        "every project; exits non-zero and names the first broken link if one is found."
    )

    def add_arguments(self, parser):
        parser.add_argument("project", nargs="?", help="the project's name or id; default all")
        parser.add_argument(
            "--log-heads",
            action="store_true",
            help="log each intact chain's head in the transparency log if it is not there "
            "yet (after a crash between an event's commit and its head's append)",
        )

    def handle(self, *args, project: str | None = None, log_heads: bool = False, **options):
        every_project = Project.objects.order_by("pk")
        projects: Iterable[Project] = every_project
        if project is not None:
            found = every_project.filter(name=project).first()
            if found is None and project.isdigit():
                found = every_project.filter(pk=int(project)).first()
            if found is None:
                raise CommandError(f"No project named {project!r}.")
            projects = [found]
        broken = []
        for each in projects:
            events = AuditEvent.objects.for_project(each).count()
            first_break = audit_chain_first_break(project=each)
            if first_break is None:
                if log_heads:
                    audit_head_log(project_id=each.pk)
                unlogged = audit_chain_unlogged(project=each)
                note = f", {unlogged} not yet in the transparency log" if unlogged else ""
                self.stdout.write(f"{each.name}: intact ({events} events){note}")
                continue
            broken.append(each.name)
            self.stdout.write(
                f"{each.name}: BROKEN at event {first_break.seq}: {first_break.reason}"
            )
        if broken:
            raise CommandError(f"Audit chain broken for: {', '.join(broken)}.")
