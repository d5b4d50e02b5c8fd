"""difill: a language server that fills code in the middle with a text-diffusion model.

``__version__`` is read from the installed package's metadata, so pyproject.toml is the one place
the version is written.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("difill")
except PackageNotFoundError:  # a source tree on sys.path without an install: no metadata to read
    __version__ = "0+unknown"
