"""Optional dependencies: import them on first use, with an error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from presentation_dependence.errors import ConfigError

__all__ = ["MissingExtraError", "import_optional"]


class MissingExtraError(ConfigError, ImportError):
    """An optional package that a feature needs is not installed."""


def import_optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module``; if it is missing, raise :class:`MissingExtraError` naming ``extra``.

    >>> import_optional("json", extra="train", purpose="reading JSON").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(
            f"{purpose} needs the '{module.split('.')[0]}' package ({e}). Fix: install the "
            f"'{extra}' extra, e.g. pip install 'presentation-dependence[{extra}]' "
            "(./setup.sh --full installs it)"
        ) from None
