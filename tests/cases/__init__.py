"""Importing this package registers every primitive's gradient-check cases."""

from tests.cases import core  # noqa: F401
from tests.cases import spatial  # noqa: F401
from tests.cases import sequences  # noqa: F401
from tests.cases import vocabulary  # noqa: F401
from tests.cases import assign  # noqa: F401
