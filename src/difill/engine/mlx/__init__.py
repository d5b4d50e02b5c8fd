"""The MLX engine: difill's sampler over mlx-vlm's DiffusionGemma (docs/mlx.md).

Importing this package loads no MLX: ``runtime.require_mlx`` does, with the install command when
it is missing.
"""
