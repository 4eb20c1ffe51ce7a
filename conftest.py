"""Root conftest. The Limbo plugin itself is registered through the ``pytest11`` entry point.

``pytester`` is enabled here because pytest only honours ``pytest_plugins`` in the top-level
conftest; the project's plugin tests (tests/plugin/) run pytest on copies of the specs with it.
"""

pytest_plugins = ["pytester"]
