"""rungbench: evaluate LLM agents by controlled intervention rather than by score alone."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("rungbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "errors"]
