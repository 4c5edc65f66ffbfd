"""Shared fixtures: the real data of ../shared/data and small taxonomies."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / ".." / "shared" / "data").resolve()
FIXTURES = ROOT / "fixtures"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"real data not found at {DATA} (expected ../shared/data next to the repo)")
    return DATA


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
