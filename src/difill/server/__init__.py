"""difill language server: LSP in front of the diffusion engine."""
