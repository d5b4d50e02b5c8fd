"""difill engine: DiffusionGemma infilling. Knows tensors, knows nothing of LSP."""
