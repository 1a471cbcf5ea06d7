"""Importing this package registers every primitive's gradient-check cases."""

from tests.cases import core  # noqa: F401
