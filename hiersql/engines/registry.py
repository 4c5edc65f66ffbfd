"""The engines by name: ``--engine NAME`` opens the engine its factory makes (:func:`open_engine`).

A factory takes a :class:`~hiersql.options.RunOptions` and the number of truth and prediction rows to evaluate
when known before the engine starts (``None`` otherwise). DuckDB has none: it is the embedded store itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InputError, display, masked
from .base import Engine
from .postgres import PostgresEngine
from .spark.session import open_spark


def open_postgres(run: Any, rows: int | None = None) -> PostgresEngine:
    """The :class:`PostgresEngine` of the server at ``run.postgres_url``; one not reached, or refused, is an
    :class:`~hiersql.errors.InputError`."""
    if not run.postgres_url:
        raise InputError("--engine postgres needs the server", "--postgres-url", value=None)
    import psycopg

    try:
        engine = PostgresEngine(run.postgres_url)
    except psycopg.Error as exc:  # not reached, refused, or not a connection string at all
        raise InputError(f"cannot connect: {masked(' '.join(str(exc).split()), run.postgres_url)}",
                         "--postgres-url", value=display(run.postgres_url)) from None
    (role, database, temporary), = engine.execute(
        "SELECT current_user, current_database(), has_database_privilege(current_database(), 'TEMPORARY')")
    if not temporary:  # the stages are temporary tables of the session
        engine.close()
        raise InputError(f"role {role!r} may not create temporary tables in database {database!r}, where the"
                         f" engine keeps its stages (GRANT TEMPORARY ON DATABASE ... TO ...)", "--postgres-url",
                         value=display(run.postgres_url))
    return engine


FACTORIES: dict[str, Callable[[Any, int | None], Engine]] = {"postgres": open_postgres, "spark": open_spark}


def open_engine(run: Any, rows: int | None = None) -> Engine | None:
    """The engine of a :class:`~hiersql.options.RunOptions` (``None`` for the embedded DuckDB store), made by
    the factory of ``run.engine`` (:data:`FACTORIES`): PostgreSQL by :func:`open_postgres`, Spark by
    :func:`~hiersql.engines.spark.session.open_spark`."""
    factory = FACTORIES.get(run.engine)
    return None if factory is None else factory(run, rows)
