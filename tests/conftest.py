"""Fixtures shared by more than one test module (plain helpers live in tests/helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator

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
