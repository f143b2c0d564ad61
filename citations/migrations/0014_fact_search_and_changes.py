"""Ranked recall and the change feed (issue 36), both kept by the database itself.

- ``citations_factsearch``: one row per believable fact, the text full-text search
  reads (statement and value; the predicate's name, description and synonyms). On
  PostgreSQL a generated ``tsvector`` (English stemming, content weighted A and the
  predicate's words B) with a GIN index on (subject, vector) through ``btree_gin``, so a
  recall's search and its subject filter are one index scan; on SQLite an FTS5 table
  (porter stemming) whose rowid is the search row's ID, kept by triggers.
- ``citations_factchange``: the change feed, numbered per project in commit order.

Triggers on the fact and fact-version tables write both inside the transaction that
writes the fact (ingest, authored records, corrections, rebuilds, supersession, erasure),
whatever code path it takes; erasure deletes the search row (and with it the FTS5 row).
A change's number is taken under the project row's lock, the lock the audit chain's
append takes too and holds until commit, so numbers are handed out in commit order and
a reader paging by them never sees a smaller number appear behind it.

The built-in predicates' vocabulary (citations.vocabulary) is compiled into the SQL
here; changing it takes a migration that re-creates ``citations_predicate_vocabulary``
(PostgreSQL) and the SQLite insert trigger, then refreshes the search rows.

Existing facts are indexed, and each gets one ``created`` change (in creation order):
the history before this migration is not replayed into the feed.

A later migration that lets Django rebuild the fact or fact-version table on SQLite
would drop these triggers (as it would 0003's); add columns with RunSQL there.
"""

import django.db.models.deletion
from django.db import migrations, models

from citations.vocabulary import builtin_vocabularies


def _literal(text):
    return "'" + text.replace("'", "''") + "'"


def _vocabulary_sql(project, predicate):
    """The vocabulary of ``predicate`` for a fact of ``project``, as one SQL expression."""
    builtins = " ".join(
        f"WHEN {_literal(name)} THEN {_literal(words)}"
        for name, words in builtin_vocabularies().items()
    )
    return (
        f"coalesce(CASE {predicate} {builtins} END, "
        "(SELECT replace(d.name, '_', ' ') || ' ' || d.description || ' ' || d.synonyms "
        f"FROM citations_declaredpredicate d WHERE d.project_id = {project} "
        f"AND d.name = {predicate}), replace({predicate}, '_', ' '))"
    )


PG_FORWARDS = f"""
CREATE EXTENSION IF NOT EXISTS btree_gin;
ALTER TABLE citations_factsearch ADD COLUMN vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', content), 'A')
    || setweight(to_tsvector('english', vocabulary), 'B')
) STORED;
CREATE INDEX citations_factsearch_subject_vector
    ON citations_factsearch USING gin (subject_id, vector);

CREATE FUNCTION citations_predicate_vocabulary(bigint, text) RETURNS text
LANGUAGE sql STABLE AS $$ SELECT {_vocabulary_sql("$1", "$2")} $$;

CREATE FUNCTION citations_change_record(
    p_project bigint, p_subject bigint, p_fact uuid, p_type text, p_at timestamptz
) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- The audit chain's lock, held to commit: numbers are handed out in commit order.
    PERFORM 1 FROM citations_project WHERE id = p_project FOR UPDATE;
    INSERT INTO citations_factchange (project_id, subject_id, seq, type, fact_id, at)
    SELECT p_project, p_subject, coalesce(max(seq), 0) + 1, p_type, p_fact, p_at
    FROM citations_factchange WHERE project_id = p_project;
END
$$;

CREATE FUNCTION citations_fact_index() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.erased_at IS NULL THEN
            INSERT INTO citations_factsearch (fact_id, project_id, subject_id, content, vocabulary)
            VALUES (NEW.id, NEW.project_id, NEW.subject_id, NEW.statement || ' ' || NEW.value,
                    citations_predicate_vocabulary(NEW.project_id, NEW.predicate));
            PERFORM citations_change_record(
                NEW.project_id, NEW.subject_id, NEW.id, 'created', NEW.created_at);
        END IF;
    ELSIF NEW.erased_at IS NOT NULL THEN
        DELETE FROM citations_factsearch WHERE fact_id = NEW.id;
        IF OLD.erased_at IS NULL THEN
            PERFORM citations_change_record(
                NEW.project_id, NEW.subject_id, NEW.id, 'erased', NEW.erased_at);
        END IF;
    ELSIF (NEW.statement, NEW.value) IS DISTINCT FROM (OLD.statement, OLD.value) THEN
        UPDATE citations_factsearch SET content = NEW.statement || ' ' || NEW.value
        WHERE fact_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER citations_fact_index AFTER INSERT OR UPDATE ON citations_fact
FOR EACH ROW EXECUTE FUNCTION citations_fact_index();

CREATE FUNCTION citations_factversion_changes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    before_superseder uuid;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.superseded_by_id IS NOT NULL THEN
            SELECT superseded_by_id INTO before_superseder FROM citations_factversion
            WHERE fact_id = NEW.fact_id AND seq = NEW.seq - 1;
            IF before_superseder IS DISTINCT FROM NEW.superseded_by_id THEN
                PERFORM citations_change_record(
                    NEW.project_id, NEW.subject_id, NEW.fact_id, 'superseded', NEW.known_from);
            END IF;
        END IF;
    ELSIF NEW.retraction_id IS NOT NULL AND OLD.retraction_id IS NULL THEN
        PERFORM citations_change_record(
            NEW.project_id, NEW.subject_id, NEW.fact_id, 'retracted', NEW.known_until);
    ELSIF NEW.reinterpreted_by_id IS NOT NULL AND OLD.reinterpreted_by_id IS NULL THEN
        PERFORM citations_change_record(
            NEW.project_id, NEW.subject_id, NEW.fact_id, 'reinterpreted', NEW.known_until);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER citations_factversion_changes AFTER INSERT OR UPDATE ON citations_factversion
FOR EACH ROW EXECUTE FUNCTION citations_factversion_changes();

"""

# Facts stored before the triggers (here; bench/bench_ledger.py after its COPY load).
PG_BACKFILL = """
INSERT INTO citations_factsearch (fact_id, project_id, subject_id, content, vocabulary)
SELECT id, project_id, subject_id, statement || ' ' || value,
       citations_predicate_vocabulary(project_id, predicate)
FROM citations_fact WHERE erased_at IS NULL;
INSERT INTO citations_factchange (project_id, subject_id, seq, type, fact_id, at)
SELECT project_id, subject_id,
       row_number() OVER (PARTITION BY project_id ORDER BY created_at, id), 'created', id,
       created_at
FROM citations_fact WHERE erased_at IS NULL;
"""

PG_BACKWARDS = """
DROP TRIGGER citations_factversion_changes ON citations_factversion;
DROP FUNCTION citations_factversion_changes();
DROP TRIGGER citations_fact_index ON citations_fact;
DROP FUNCTION citations_fact_index();
DROP FUNCTION citations_change_record(bigint, bigint, uuid, text, timestamptz);
DROP FUNCTION citations_predicate_vocabulary(bigint, text);
DROP INDEX citations_factsearch_subject_vector;
ALTER TABLE citations_factsearch DROP COLUMN vector;
"""


def _sqlite_change(project, subject, fact, kind, at):
    return (
        "INSERT INTO citations_factchange (project_id, subject_id, seq, type, fact_id, at) "
        f"SELECT {project}, {subject}, coalesce(max(seq), 0) + 1, '{kind}', {fact}, {at} "
        f"FROM citations_factchange WHERE project_id = {project};"
    )


# SQLite has one writer at a time, holding the database's lock until commit: a number
# taken from max(seq) inside the writing transaction is in commit order already.
SQLITE_FORWARDS = [
    "CREATE VIRTUAL TABLE citations_factsearch_fts USING fts5("
    "body, vocabulary, tokenize = 'porter unicode61')",
    "CREATE TRIGGER citations_factsearch_fts_insert AFTER INSERT ON citations_factsearch "
    "BEGIN INSERT INTO citations_factsearch_fts (rowid, body, vocabulary) "
    "VALUES (NEW.id, NEW.content, NEW.vocabulary); END",
    "CREATE TRIGGER citations_factsearch_fts_update AFTER UPDATE ON citations_factsearch "
    "BEGIN UPDATE citations_factsearch_fts SET body = NEW.content, vocabulary = NEW.vocabulary "
    "WHERE rowid = NEW.id; END",
    "CREATE TRIGGER citations_factsearch_fts_delete AFTER DELETE ON citations_factsearch "
    "BEGIN DELETE FROM citations_factsearch_fts WHERE rowid = OLD.id; END",
    "CREATE TRIGGER citations_fact_index_insert AFTER INSERT ON citations_fact "
    "WHEN NEW.erased_at IS NULL BEGIN "
    "INSERT INTO citations_factsearch (fact_id, project_id, subject_id, content, vocabulary) "
    "VALUES (NEW.id, NEW.project_id, NEW.subject_id, NEW.statement || ' ' || NEW.value, "
    f"{_vocabulary_sql('NEW.project_id', 'NEW.predicate')}); "
    + _sqlite_change("NEW.project_id", "NEW.subject_id", "NEW.id", "created", "NEW.created_at")
    + " END",
    "CREATE TRIGGER citations_fact_index_erase AFTER UPDATE OF erased_at ON citations_fact "
    "WHEN NEW.erased_at IS NOT NULL AND OLD.erased_at IS NULL BEGIN "
    "DELETE FROM citations_factsearch WHERE fact_id = NEW.id; "
    + _sqlite_change("NEW.project_id", "NEW.subject_id", "NEW.id", "erased", "NEW.erased_at")
    + " END",
    "CREATE TRIGGER citations_fact_index_restate AFTER UPDATE OF statement, value "
    "ON citations_fact WHEN NEW.erased_at IS NULL BEGIN "
    "UPDATE citations_factsearch SET content = NEW.statement || ' ' || NEW.value "
    "WHERE fact_id = NEW.id; END",
    "CREATE TRIGGER citations_factversion_superseded AFTER INSERT ON citations_factversion "
    "WHEN NEW.superseded_by_id IS NOT NULL AND NEW.superseded_by_id IS NOT ("
    "SELECT superseded_by_id FROM citations_factversion "
    "WHERE fact_id = NEW.fact_id AND seq = NEW.seq - 1) BEGIN "
    + _sqlite_change(
        "NEW.project_id", "NEW.subject_id", "NEW.fact_id", "superseded", "NEW.known_from"
    )
    + " END",
    "CREATE TRIGGER citations_factversion_retracted AFTER UPDATE OF retraction_id "
    "ON citations_factversion WHEN NEW.retraction_id IS NOT NULL AND OLD.retraction_id IS NULL "
    "BEGIN "
    + _sqlite_change(
        "NEW.project_id", "NEW.subject_id", "NEW.fact_id", "retracted", "NEW.known_until"
    )
    + " END",
    "CREATE TRIGGER citations_factversion_reinterpreted AFTER UPDATE OF reinterpreted_by_id "
    "ON citations_factversion WHEN NEW.reinterpreted_by_id IS NOT NULL "
    "AND OLD.reinterpreted_by_id IS NULL BEGIN "
    + _sqlite_change(
        "NEW.project_id", "NEW.subject_id", "NEW.fact_id", "reinterpreted", "NEW.known_until"
    )
    + " END",
    "INSERT INTO citations_factsearch (fact_id, project_id, subject_id, content, vocabulary) "
    "SELECT id, project_id, subject_id, statement || ' ' || value, "
    f"{_vocabulary_sql('citations_fact.project_id', 'citations_fact.predicate')} "
    "FROM citations_fact WHERE erased_at IS NULL",
    "INSERT INTO citations_factchange (project_id, subject_id, seq, type, fact_id, at) "
    "SELECT project_id, subject_id, "
    "row_number() OVER (PARTITION BY project_id ORDER BY created_at, id), 'created', id, "
    "created_at FROM citations_fact WHERE erased_at IS NULL",
]
SQLITE_BACKWARDS = [
    *(
        f"DROP TRIGGER {name}"
        for name in (
            "citations_factversion_reinterpreted",
            "citations_factversion_retracted",
            "citations_factversion_superseded",
            "citations_fact_index_restate",
            "citations_fact_index_erase",
            "citations_fact_index_insert",
            "citations_factsearch_fts_delete",
            "citations_factsearch_fts_update",
            "citations_factsearch_fts_insert",
        )
    ),
    "DROP TABLE citations_factsearch_fts",
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FORWARDS)
        schema_editor.execute(PG_BACKFILL)
    elif vendor == "sqlite":
        for statement in SQLITE_FORWARDS:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_BACKWARDS)
    elif vendor == "sqlite":
        for statement in SQLITE_BACKWARDS:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("citations", "0013_fact_newest_first"),
    ]

    operations = [
        migrations.AddField(
            model_name="declaredpredicate",
            name="synonyms",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.CreateModel(
            name="FactSearch",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("content", models.TextField()),
                ("vocabulary", models.TextField()),
                (
                    "fact",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="citations.fact",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="citations.project",
                    ),
                ),
                (
                    "subject",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="citations.subject",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="FactChange",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("seq", models.BigIntegerField()),
                (
                    "type",
                    models.CharField(
                        choices=[
                            ("created", "Created"),
                            ("superseded", "Superseded"),
                            ("retracted", "Retracted"),
                            ("reinterpreted", "Reinterpreted"),
                            ("erased", "Erased"),
                        ],
                        max_length=16,
                    ),
                ),
                ("at", models.DateTimeField()),
                (
                    "fact",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="changes",
                        to="citations.fact",
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="citations.project",
                    ),
                ),
                (
                    "subject",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="citations.subject",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(fields=["subject", "seq"], name="citations_f_subject_d48815_idx")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("project", "seq"), name="factchange_unique_seq"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            (
                                "type__in",
                                ["created", "superseded", "retracted", "reinterpreted", "erased"],
                            )
                        ),
                        name="factchange_type",
                    ),
                ],
            },
        ),
        migrations.RunPython(forwards, backwards),
    ]
