"""Fixtures shared by more than one test module (plain helpers live in tests/helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import Browser, require_chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """A headless Chromium for the module's tests (skipped where there is none), closed after them."""
    b = Browser(require_chromium(), tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Any]:
    """A Dask client of two in-process workers on a scheduler reachable over TCP (the CLI tests connect to it)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", dashboard_address=":0"
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()
