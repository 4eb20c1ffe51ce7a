"""Test support shipped with the package: a local OpenAI-compatible server and scripted models.

Nothing here imports litellm; the server speaks plain HTTP so that the scaffold's real client
stack is what gets tested. Import from the submodules: :mod:`.openai_server` (the server,
:class:`~.openai_server.Reply`, :class:`~.openai_server.ChatRequest`) and :mod:`.models` (scripted
models). The package itself imports nothing, so ``python -m limbo_plugin.testing.openai_server``
runs cleanly.
"""
