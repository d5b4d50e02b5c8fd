"""The LSP plumbing: message framing, the protocol's request rules, TCP, logs and progress to the editor."""
