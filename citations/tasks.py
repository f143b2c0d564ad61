"""Background jobs of the ledger, run by the django-tasks database worker (db_worker).

Each task is a thin call into a service; a service queues one through the function
here that its caller hands it, so no service imports this module.
"""

from __future__ import annotations

from django_tasks import task

from citations.services.rebuilds import project_rebuild_run


@task()
def project_rebuild(generation_id: int) -> dict:
    """Run a queued project rebuild; its arguments and result hold IDs and counts only."""
    return project_rebuild_run(generation_id=generation_id)


def project_rebuild_enqueue(generation_id: int) -> str:
    """Queue the run of a project rebuild's generation; returns the job's ID."""
    return str(project_rebuild.enqueue(generation_id=generation_id).id)
