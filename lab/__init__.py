"""Training, eval and bench: how the default model is made and measured, outside the LSP server."""
