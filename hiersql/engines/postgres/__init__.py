"""PostgreSQL: the engine (:mod:`.engine`) and the label tables it reads in place (:mod:`.sources`)."""

from .engine import PostgresEngine

__all__ = ["PostgresEngine"]
