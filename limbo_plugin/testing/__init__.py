"""Test support shipped with the package: a local OpenAI-compatible server and scripted models.

Nothing here imports litellm; the server speaks plain HTTP so that the scaffold's real client
stack is what gets tested. Import from the submodules: :mod:`.openai_server` (the server; it
re-exports :class:`~.model_io.Reply` and :class:`~.model_io.ChatRequest`, what a scripted model
returns and is given, from :mod:`.model_io`) and :mod:`.models` (scripted models). The wire
formats are :mod:`.chat_wire` and :mod:`.responses_wire`. The package itself imports nothing,
so ``python -m limbo_plugin.testing.openai_server`` runs cleanly.
"""
