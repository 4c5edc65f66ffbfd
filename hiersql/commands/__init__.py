"""CLI sub-commands. Each module exposes ``register(subparsers)``, which adds one sub-command whose
``func(args) -> int`` runs it. ``register`` only declares arguments: heavy imports happen inside ``func``."""

COMMANDS = ("evaluate", "demo", "sql", "install_macros", "confusion", "hemkit", "scoring", "jobs", "report",
            "breakdown", "compare", "dbt")
