"""Background jobs of the ledger, run by the django-tasks database worker (db_worker)."""

from __future__ import annotations

from django_tasks import task


@task()
def project_rebuild(generation_id: int) -> dict:
    """Run a queued project rebuild; its arguments and result hold IDs and counts only."""
    from citations.services.rebuilds import rebuild_project_run

    return rebuild_project_run(generation_id=generation_id)
