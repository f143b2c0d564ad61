"""Querysets compiled to SQL once per shape, then run with each call's values.

Django compiles a queryset's SQL on every evaluation (the select list of its
``select_related`` joins, the ORDER BY, the WHERE tree): on the ledger's hot reads that
was about a third of a request's Python time, for SQL text that never changes between
calls. A ``PreparedQuery`` builds its queryset with marker values, compiles it once, and
records which SQL parameter each argument became (and how the backend adapted it: a UUID
as hex on SQLite, a datetime as text). Later calls substitute their own values and let
Django run the SQL and build the model instances (``select_related`` objects included)
exactly as before: the same statement, the same rows, the same objects.

A shape is cached only if compiling it with a second set of markers gives the same SQL
and differs in exactly the mapped parameters, so an argument Django transforms (a
``LIKE`` pattern, say) is never frozen into the cache: that shape is compiled every time.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from collections.abc import Callable, Hashable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, router, transaction
from django.db.models import BinaryField, BooleanField, Model, QuerySet, signals
from django.db.models.expressions import RawSQL

from attest.replicas import reading_from

_M = TypeVar("_M", bound=Model)
_Adapt = Callable[[Any], Any]


def _markers(kinds: dict[str, type], round_: int) -> dict[str, Any]:
    """Values no caller sends, distinct per argument and per round."""
    values: dict[str, Any] = {}
    for n, (name, kind) in enumerate(sorted(kinds.items())):
        seed = 0x5EED_0000 + round_ * 1000 + n
        if kind is int:
            values[name] = -seed
        elif kind is uuid.UUID:
            values[name] = uuid.UUID(int=seed)
        elif kind is datetime:
            values[name] = datetime(1901, 2, 3, tzinfo=UTC) + timedelta(microseconds=seed)
        elif kind is str:
            values[name] = f"\x1fmarker-{seed}"
        else:
            raise TypeError(f"no marker for {kind!r}")
    return values


def _adapters(alias: str, value: Any) -> list[_Adapt]:
    """The forms a backend may give ``value`` as a parameter, the value itself first."""
    ops = connections[alias].ops
    forms: list[_Adapt] = [lambda v: v]
    if isinstance(value, uuid.UUID):
        forms += [lambda v: v.hex, str]
    if isinstance(value, datetime):
        forms.append(ops.adapt_datetimefield_value)
    return forms


class PreparedQuery(Generic[_M]):
    """``build(**values)`` -> a queryset whose shape depends only on ``key``'s parts.

    ``kinds`` names each argument's type (int, str, uuid.UUID or datetime). Arguments
    that change the query's shape (None or not, a limit) go into the ``key`` instead.
    """

    def __init__(
        self, build: Callable[..., QuerySet[_M]], *, locking: bool = False, **kinds: type
    ) -> None:
        # ``locking``: the queryset locks its rows (select_for_update), so it runs on the
        # primary, as Django sends a queryset that is for writing, never on a replica.
        self.build, self.kinds, self.locking = build, kinds, locking
        self._shapes: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def rows(self, key: Hashable, /, **values: Any) -> list[_M]:
        """The rows of ``build(key, **values)``, in order, as ``list()`` of it gives them.

        ``values`` may leave out arguments a shape does not use (None for the builder).
        """
        # A read replica inside attest.replicas.replica_reads (a locking read: the primary).
        using = DEFAULT_DB_ALIAS if self.locking else reading_from()
        names = frozenset(values)
        shape_key = (using, connections[using].vendor, key, names)
        shape = self._shapes.get(shape_key)
        if shape is None:
            shape = self._prepare(key, using, names)
            with self._lock:
                self._shapes[shape_key] = shape
        if shape is False:  # not cacheable: compiled each time, as Django does
            return list(self.build(key, **values).using(using))
        template, compiler, sql, slots = shape
        params = tuple(
            fixed if name is None else adapt(values[name]) for name, adapt, fixed in slots
        )
        run = copy.copy(compiler)
        run.connection = connections[using]  # connections are per thread
        run.as_sql = lambda *args, **kwargs: (sql, params)
        query = copy.copy(template.query)
        query.get_compiler = lambda *args, **kwargs: run
        return list(QuerySet(model=template.model, query=query, using=using))

    def _prepare(self, key: Hashable, using: str, names: frozenset[str]) -> Any:
        kinds = {name: self.kinds[name] for name in names}
        first, second = _markers(kinds, 1), _markers(kinds, 2)
        try:
            template = self.build(key, **first).using(using)
            compiler = template.query.get_compiler(using=using)
            sql, params = compiler.as_sql()
            check = self.build(key, **second).using(using).query.get_compiler(using=using)
            sql_again, params_again = check.as_sql()
        except Exception:  # a marker the field refuses (a UUID given as text): Django's way
            return False
        if sql != sql_again or len(params) != len(params_again):
            return False
        slots = []
        for param, param_again in zip(params, params_again, strict=True):
            slot = self._slot(using, param, param_again, first, second)
            if slot is None:
                return False
            slots.append(slot)
        if {name for name, _, _ in slots} - {None} != names:
            return False  # an argument that reached no parameter: keep Django's way
        return template, compiler, sql, tuple(slots)

    def _slot(self, using, param, param_again, first, second):
        """(argument, adapter, None) for a parameter a marker became; (None, None, value)
        for one that is the same in both compilations; None when it cannot be told."""
        for name, marker in first.items():
            for adapt in _adapters(using, marker):
                if param == adapt(marker) and param_again == adapt(second[name]):
                    return name, adapt, None
        if param == param_again and not any(
            isinstance(param, str) and str(marker) in param for marker in first.values()
        ):
            return None, None, param
        return None


def first_of(queryset: QuerySet[_M]) -> QuerySet[_M]:
    """The query ``queryset.first()`` sends (its first row by its ordering, else by key), for
    a builder: ``rows[0] if rows else None`` is then what first() answers."""
    return (queryset if queryset.ordered else queryset.order_by("pk"))[:1]


# A list of values as ONE parameter, so a query's text does not change with their number
# and a PreparedQuery compiles it once (an ``__in`` lookup writes a placeholder a value,
# a new text for every count, compiled each time; and no count can pass a database's
# limit on parameters). On PostgreSQL the parameter is an array literal cast to the
# column's type: the planner sees the constant array that ``IN (…)`` itself becomes
# (``= ANY('{…}')``), so the plans are those of the lists it replaces.


def _array_element(value: Any) -> str:
    """``value`` as a quoted element of a PostgreSQL array literal (backslash escapes)."""
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def listed(vendor: str, values: Iterable[Any]) -> str:
    """The parameter that lists ``values`` for one_of(): a PostgreSQL array literal, or a
    JSON list on SQLite, a UUID there as the backend stores it (32 hex digits)."""
    if vendor == "postgresql":
        return "{" + ",".join(_array_element(value) for value in values) + "}"
    return json.dumps([value.hex if isinstance(value, uuid.UUID) else value for value in values])


def one_of(vendor: str, column: str, sql_type: str, values: Any) -> RawSQL:
    """A condition: ``column`` (quoted SQL) is one of the values ``values`` lists (see
    listed(); a marker of type str when PreparedQuery compiles). ``sql_type`` is the
    column's PostgreSQL type, which the array literal is cast to."""
    if vendor == "postgresql":
        sql = f"{column} = ANY(%s::{sql_type}[])"
    else:
        sql = f"{column} IN (SELECT value FROM json_each(%s))"
    return RawSQL(sql, (values,), output_field=BooleanField())


# Writes whose SQL text is built once per model (and column list) and database, the values
# prepared by each field as the ORM prepares them (``pre_save``, then ``get_db_prep_save``).
# Model.save() builds an InsertQuery or UpdateQuery and compiles it on every call: on a paid
# call's records that was most of each write's CPU, for a text that never changes.

_WRITES: dict[Hashable, Any] = {}


def _listened(model: type[Model]) -> bool:
    return signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model)


def created(model: type[_M], **values: Any) -> _M:
    """``model.objects.create(**values)``: the same row, the same instance (its automatic
    key set from the INSERT's RETURNING), in the same transaction; the INSERT's text built
    once. A model Django saves in more than one step (a child of a concrete model), one with
    a save signal's receiver, a database default or a field with its own placeholder, or a
    value that is an expression, is saved by Django as ``create`` does."""
    obj = model(**values)
    using = router.db_for_write(model, instance=obj)
    meta = model._meta
    db = connections[using]
    if meta.parents or _listened(model) or not db.features.can_return_columns_from_insert:
        obj.save(force_insert=True, using=using)
        return obj
    pk_set = obj.pk is not None
    if not pk_set and meta.pk is not None and meta.pk.has_default():
        obj.pk, pk_set = meta.pk.get_default(), True
    key = ("insert", model, using, db.vendor, pk_set)
    shape = _WRITES.get(key)
    if shape is None:
        shape = _WRITES[key] = _insert_shape(model, db, pk_set)
    if shape is False:
        obj.save(force_insert=True, using=using)
        return obj
    sql, fields, returning = shape
    raw = [field.pre_save(obj, True) for field in fields]
    if any(hasattr(value, "resolve_expression") for value in raw):
        obj.save(force_insert=True, using=using)
        return obj
    params = [field.get_db_prep_save(value, db) for field, value in zip(fields, raw, strict=True)]
    with transaction.mark_for_rollback_on_error(using), db.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone() if returning else None
    if row is not None:
        for field, value in zip(returning, row, strict=True):
            setattr(obj, field.attname, value)
    obj._state.adding = False
    obj._state.db = using
    return obj


def _insert_shape(model: type[Model], db: Any, pk_set: bool) -> Any:
    meta = model._meta
    auto = meta.auto_field
    fields = [
        field
        for field in meta.local_concrete_fields
        if not field.generated and (pk_set or field is not auto)
    ]
    if any(field.has_db_default() or _own_placeholder(field, db) for field in fields):
        return False
    returning = [auto] if auto is not None else []
    cols = [field.get_col(meta.db_table) for field in returning]
    if any(db.ops.get_db_converters(col) or col.field.get_db_converters(db) for col in cols):
        return False  # a key that needs converting back: Django's way
    quote = db.ops.quote_name
    table = quote(meta.db_table)
    columns = ", ".join(quote(field.column) for field in fields)
    sql = f"INSERT INTO {table} ({columns}) VALUES ({', '.join(['%s'] * len(fields))})"
    if returning:
        sql += " RETURNING " + ", ".join(f"{table}.{quote(f.column)}" for f in returning)
    return sql, fields, returning


def _own_placeholder(field: Any, db: Any) -> bool:
    """Whether the ORM writes ``field``'s value as other than ``%s`` (a BinaryField asks
    the backend, which answers ``%s`` on PostgreSQL and SQLite)."""
    if isinstance(field, BinaryField):
        return db.ops.binary_placeholder_sql(None) != "%s"
    return hasattr(field, "get_placeholder")


def saved(obj: Model, update_fields: Iterable[str]) -> None:
    """``obj.save(update_fields=update_fields)``: the same UPDATE by key (an ``auto_now``
    field named is set to now on the instance, as save() sets it), ``DatabaseError`` when it
    changes no row, as save() raises; the statement's text built once."""
    model, meta = type(obj), obj._meta
    names = frozenset(update_fields)
    using = router.db_for_write(model, instance=obj)
    db = connections[using]
    if meta.parents or _listened(model) or obj.pk is None:
        obj.save(update_fields=names, using=using)
        return
    key = ("update", model, using, db.vendor, names)
    shape: Any = _WRITES.get(key)
    if shape is None:
        fields = [
            field
            for field in meta.local_concrete_fields
            if not field.primary_key
            and not field.generated
            and (field.name in names or field.attname in names)
        ]
        if len(fields) != len(names) or any(_own_placeholder(f, db) for f in fields):
            shape = False  # a name save() would refuse, or a field of its own form
        else:
            quote = db.ops.quote_name
            sets = ", ".join(f"{quote(str(field.column))} = %s" for field in fields)
            table, pk = quote(meta.db_table), quote(str(meta.pk.column))
            sql = f"UPDATE {table} SET {sets} WHERE {pk} = %s"
            shape = sql, fields
        _WRITES[key] = shape
    if shape is False:
        obj.save(update_fields=names, using=using)
        return
    sql, fields = shape
    raw = [field.pre_save(obj, False) for field in fields]
    if any(hasattr(value, "resolve_expression") for value in raw):
        obj.save(update_fields=names, using=using)
        return
    params = [field.get_db_prep_save(value, db) for field, value in zip(fields, raw, strict=True)]
    params.append(meta.pk.get_db_prep_value(obj.pk, db))
    with transaction.mark_for_rollback_on_error(using), db.cursor() as cursor:
        cursor.execute(sql, params)
        changed = cursor.rowcount
    if changed < 1:
        raise DatabaseError("Save with update_fields did not affect any rows.")
    obj._state.adding = False
    obj._state.db = using


def prepared(model: type[Model], **values: Any) -> list[Any]:
    """``values`` (field name: value, in their order) as the ORM sends them to the default
    database: each prepared by its field (``get_db_prep_save``), for a statement built once."""
    db = connections[DEFAULT_DB_ALIAS]
    fields = _fields(model)
    return [fields[name].get_db_prep_save(value, db) for name, value in values.items()]


def _fields(model: type[Model]) -> dict[str, Any]:
    fields = _WRITES.get(("fields", model))
    if fields is None:
        fields = _WRITES[("fields", model)] = {f.name: f for f in model._meta.concrete_fields}
    return fields


def columns(model: type[Model], *names: str) -> list[str]:
    """The quoted columns of ``model``'s fields ``names``, for a statement built once."""
    quote = connections[DEFAULT_DB_ALIAS].ops.quote_name
    fields = _fields(model)
    return [quote(fields[name].column) for name in names]


def run(sql: str, params: Iterable[Any], *, using: str = DEFAULT_DB_ALIAS) -> tuple[int, list]:
    """Run one statement whose text a caller built once: (rows changed, rows returned).

    Like QuerySet.update, an error inside ``transaction.atomic`` marks it for rollback."""
    with transaction.mark_for_rollback_on_error(using), connections[using].cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.rowcount, cursor.fetchall() if cursor.description else []
