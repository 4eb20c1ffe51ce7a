"""Root conftest of the checkout; the Limbo plugin itself is registered through the ``pytest11``
entry point, and ``pytester`` (for the plugin tests in tests/plugin/) in pytest.ini: pytest also
loads this file for a run of the checkout's specs from another directory, where a
``pytest_plugins`` here would be an error."""
