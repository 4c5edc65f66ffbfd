"""Spark through a Spark Connect server (``--spark-remote sc://HOST:PORT``): its session, and what the engine
asks of a session that has no ``SparkContext`` (no accumulators, no status tracker, no driver-side files).

The server runs the queries, reads the input files (paths as the server sees them) and runs the Python steps
solved per partition in its executors' Python workers; this process plans, uploads tables through Arrow and
solves the other steps. No JVM starts here: the client is pyspark's (``pip install 'pyspark[connect]'``).
"""

from __future__ import annotations

import atexit
import warnings
from typing import Any

from ...errors import InputError, display, is_spark_error, spark_message

DEFAULT_PORT = 15002  # Spark Connect's (spark.connect.grpc.binding.port), when the URL gives none


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (it has no ``sparkContext``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def master_of(spark: Any) -> str:
    """The master of the session's executors (of the server's session on Spark Connect)."""
    return spark.conf.get("spark.master")


def connect_session(run: Any) -> Any:
    """The Spark Connect session of ``run.spark_remote``, with ``run.spark_conf`` set on it (the server's
    own settings otherwise: none of :data:`~hiersql.engines.spark.SPARK_DEFAULTS`, which are the JVM's that
    this process would start). A server that does not accept the connection, or does not answer as a Spark
    Connect server, is an :class:`~hiersql.errors.InputError` naming ``--spark-remote``, said at once (the
    client would retry for ten minutes); a setting it refuses one naming that ``--spark-conf``. The session is
    released on the server when this process ends."""
    from urllib.parse import urlsplit

    url = run.spark_remote
    address = urlsplit(url.split("/;", 1)[0])
    reason = unanswered([(address.hostname or "", address.port or DEFAULT_PORT)])
    if reason is not None:
        raise InputError(f"no Spark Connect server answers there ({reason})", "--spark-remote", value=display(url))
    from pyspark.sql import SparkSession

    try:
        from pyspark.sql.connect.client.retries import DefaultPolicy
    except ImportError as exc:  # pyspark without its connect extra (grpcio, ...)
        raise InputError(f"Spark Connect needs pyspark's connect extra, pip install 'pyspark[connect]' ({exc})",
                         "--spark-remote", value=display(url)) from None
    # a session of its own on the server (its own views), at this URL whatever this process opened before; pyspark's
    # API in Spark Connect's mode from now on
    session = SparkSession.builder.remote(url).create()
    retries = session.client.get_retry_policies()
    session.client.set_retry_policies([DefaultPolicy(max_retries=3)])  # about a second, for the check alone
    try:
        with warnings.catch_warnings():  # pyspark's word on each retry: the error below says it
            warnings.simplefilter("ignore")
            session.conf.get("spark.master")
    except Exception as exc:
        if not is_spark_error(exc):
            raise
        session.client.close()
        details = getattr(exc.__cause__ or exc.__context__, "details", None)  # gRPC's reason, not its repr
        reason = details() if callable(details) else spark_message(exc)
        raise InputError(f"not a Spark Connect server that answers ({reason})", "--spark-remote",
                         value=display(url)) from None
    finally:
        session.client.set_retry_policies(retries)
    atexit.register(session.stop)  # the server then drops the session's views and checkpoints (else in an hour)
    for key, value in run.spark_conf:
        try:
            session.conf.set(key, value)
        except Exception as exc:
            if not is_spark_error(exc):
                raise
            raise InputError(f"the Spark Connect server refuses it: {spark_message(exc)}", "--spark-conf",
                             value=f"{key}={value}") from None
    return session


def unanswered(addresses: list[tuple[str, int]]) -> str | None:
    """``None`` if one of ``addresses`` (host, port) accepts a TCP connection (within 5 s), else why the first
    did not (a Spark Connect server, a standalone master: said before pyspark or a JVM is asked)."""
    import socket

    reasons = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=5).close()
            return None
        except OSError as exc:
            reasons.append(exc.strerror or str(exc))
    return reasons[0]
