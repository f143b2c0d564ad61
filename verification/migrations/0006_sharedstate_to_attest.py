"""SharedState moves to attest (attest.shared_state), its table kept as it is: state only."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("verification", "0005_refusal_tallies_plural")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="SharedState")],
            database_operations=[],
        )
    ]
