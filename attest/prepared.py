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

from django.db import connections
from django.db.models import BooleanField, Model, QuerySet
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

    def __init__(self, build: Callable[..., QuerySet[_M]], **kinds: type) -> None:
        self.build, self.kinds = build, kinds
        self._shapes: dict[Hashable, Any] = {}
        self._lock = threading.Lock()

    def rows(self, key: Hashable, **values: Any) -> list[_M]:
        """The rows of ``build(key, **values)``, in order, as ``list()`` of it gives them.

        ``values`` may leave out arguments a shape does not use (None for the builder).
        """
        using = reading_from()  # a read replica inside attest.replicas.replica_reads
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


# A list of values as ONE parameter, so a query's text does not change with their number
# and a PreparedQuery compiles it once (an ``__in`` lookup writes a placeholder a value,
# a new text for every count, compiled each time; and no count can pass a database's
# limit on parameters).


def listed(vendor: str, values: Iterable[Any]) -> str:
    """The parameter that lists ``values`` for one_of(): a JSON list of strings, a UUID as
    the backend stores it (32 hex digits on SQLite, Django's form there)."""
    if vendor == "postgresql":
        return json.dumps([str(value) for value in values])
    return json.dumps([value.hex if isinstance(value, uuid.UUID) else value for value in values])


def one_of(vendor: str, column: str, sql_type: str, values: Any) -> RawSQL:
    """A condition: ``column`` (quoted SQL) is one of the values ``values`` lists (see
    listed(); a marker of type str when PreparedQuery compiles). ``sql_type`` is the
    column's PostgreSQL type, which the JSON's text is cast to."""
    if vendor == "postgresql":
        sql = f"{column} = ANY(ARRAY(SELECT json_array_elements_text(%s::json))::{sql_type}[])"
    else:
        sql = f"{column} IN (SELECT value FROM json_each(%s))"
    return RawSQL(sql, (values,), output_field=BooleanField())
