"""The one YAML loader of every config family: experiments, training, judge tasks, readers, ...

Precedence: the tracked YAML < the environment < the command line (``--override
block.key=value``); values from the environment and the command line are parsed as YAML.
The environment variables of a family start with its prefix (:func:`env_prefix`): experiments
read ``PRESDEP__BLOCK__KEY=value``, the other families ``PRESDEP_<FAMILY>__BLOCK__KEY=value``
(``PRESDEP_TRAINING__LORA__R=8``), so one family's variables never reach another's configs.

The file is read with ``yaml.safe_load``; errors name the file and, when the fault is a key
of the file (an unknown key, a bad value, an unregistered name), its line. YAML aliases are
allowed, but a file (or an override value) that they expand to more than
:data:`MAX_EXPANDED_VALUES` values is refused as it is read: a 600-byte "alias bomb" expands to
billions, which every later step (the type check, the frozen config) would walk. Error messages
echo values bounded (:func:`~presentation_dependence.fields.shown`).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

from presentation_dependence.errors import ConfigError, RegistryError
from presentation_dependence.registry import did_you_mean

__all__ = [
    "ENV_PREFIX",
    "MAX_EXPANDED_VALUES",
    "apply_overrides",
    "check_expanded_size",
    "env_overrides",
    "env_prefix",
    "key_line",
    "list_named",
    "load_config",
    "named_config_path",
    "read_yaml_mapping",
]

T = TypeVar("T")
ENV_PREFIX = "PRESDEP__"  # the experiment configs'
#: The most values (mappings, lists and scalars, each counted wherever an alias repeats it) one
#: config file or override value may hold; the largest shipped config holds a few hundred.
MAX_EXPANDED_VALUES = 1_000_000


def env_prefix(family: str) -> str:
    """``experiment`` -> ``PRESDEP__``; ``training`` -> ``PRESDEP_TRAINING__``."""
    if family == "experiment":
        return ENV_PREFIX
    return f"PRESDEP_{re.sub(r'[^A-Za-z0-9]', '_', family).upper()}__"


def check_expanded_size(value: Any, where: str, limit: int = MAX_EXPANDED_VALUES) -> None:
    """Refuse ``value`` (parsed YAML) when it holds more than ``limit`` values, counting a
    value shared through YAML aliases once per place it appears; stops counting at the limit."""
    count, todo = 0, [value]
    while todo:
        item = todo.pop()
        count += 1
        if count > limit:
            raise ConfigError(
                f"{where}: expands to more than {limit:,} values (YAML aliases that repeat "
                "each other, an 'alias bomb'?). Fix: write the values out, or use fewer aliases"
            )
        if isinstance(item, Mapping):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)


def read_yaml_mapping(path: Path, text: str | None = None) -> dict[str, Any]:
    """``path`` parsed with ``yaml.safe_load``: a mapping (empty file: ``{}``), or ConfigError
    (also when aliases expand it beyond :data:`MAX_EXPANDED_VALUES` values)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or e}") from None
    check_expanded_size(raw, str(path))
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(raw).__name__}")
    return raw


def key_line(text: str, key: str | None) -> int | None:
    """The 1-based line of the dotted ``key`` (``data.top_k``, ``steps[2].argv``) in ``text``."""
    if not key:
        return None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        if isinstance(node, yaml.MappingNode):
            hit = [(k, v) for k, v in node.value if k.value == part]
            if not hit:
                return None
            line, node = hit[0][0].start_mark.line + 1, hit[0][1]
        elif isinstance(node, yaml.SequenceNode) and (part.startswith("[") or part.isdigit()):
            i = int(part.strip("[]"))
            if i >= len(node.value):
                return None
            node = node.value[i]
            line = node.start_mark.line + 1
        else:
            return None
    return line


def _parse_assignment(text: str, source: str) -> tuple[list[str], Any]:
    if "=" not in text:
        raise ConfigError(f"{source}: {text!r} is not KEY=VALUE (for example data.top_k=20)")
    key, _, value = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ConfigError(f"{source}: bad key {key!r} in {text!r}")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"{source}: value of {key!r} is not valid YAML: {e}") from None
    check_expanded_size(parsed, f"{source}: value of {key!r}")
    return key.split("."), parsed


def apply_overrides(raw: dict[str, Any], assignments: Sequence[str], source: str) -> dict[str, Any]:
    """Return a copy of ``raw`` with dotted ``key=value`` assignments applied.

    A numeric part indexes a list block (``silver.data.0.top_k=5`` sets ``top_k`` of the first
    element of ``silver.data``), so an element is changed without restating the whole list.
    """
    out: dict[str, Any] = copy.deepcopy(raw)
    for text in assignments:
        path, value = _parse_assignment(text, source)
        node: Any = out
        for i in range(len(path) - 1):
            node = _child(node, path, i, source)
        _assign(node, path, value, source)
    return out


def _list_index(node: list[Any], path: list[str], i: int, source: str) -> int:
    key, part = ".".join(path), path[i]
    if not part.isdigit():
        raise ConfigError(
            f"{source}: {key}: {'.'.join(path[:i])} is a list; index its elements by number "
            f"(0 to {len(node) - 1}), e.g. {'.'.join([*path[:i], '0', *path[i:]])}"
        )
    if int(part) >= len(node):
        raise ConfigError(
            f"{source}: {key}: {'.'.join(path[:i])} has {len(node)} element(s); "
            f"index {part} is out of range (0 to {len(node) - 1})"
        )
    return int(part)


def _child(node: Any, path: list[str], i: int, source: str) -> Any:
    part = path[i]
    if isinstance(node, list):
        child = node[_list_index(node, path, i, source)]
    else:
        child = node.get(part)
        if child is None:
            child = node[part] = {}
    if not isinstance(child, (dict, list)):
        raise ConfigError(f"{source}: {'.'.join(path)}: {part!r} is not a block")
    return child


def _assign(node: Any, path: list[str], value: Any, source: str) -> None:
    if isinstance(node, list):
        node[_list_index(node, path, len(path) - 1, source)] = value
    else:
        node[path[-1]] = value


def env_overrides(environ: Mapping[str, str] | None = None, prefix: str = ENV_PREFIX) -> list[str]:
    """``PRESDEP__DATA__TOP_K=20`` -> ``["data.top_k=20"]`` (keys lower-cased), sorted by key."""
    env = os.environ if environ is None else environ
    out = []
    for name in sorted(env):
        if name.startswith(prefix) and len(name) > len(prefix):
            key = ".".join(p.lower() for p in name[len(prefix) :].split("__"))
            out.append(f"{key}={env[name]}")
    return out


def load_config(
    path: str | Path,
    build: Callable[[dict[str, Any], str], T],
    *,
    family: str,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    hint: str = "",
) -> T:
    """Read ``path``, apply the family's environment then ``overrides``, ``build(raw, stem)``.

    ``build`` validates strictly (:func:`~presentation_dependence.fields.build_dataclass`);
    its ConfigError or RegistryError comes back prefixed with the file and the key's line.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{family} config not found: {path}{hint}")
    text = path.read_text(encoding="utf-8")
    raw = read_yaml_mapping(path, text)
    raw = apply_overrides(raw, env_overrides(environ, env_prefix(family)), "environment")
    raw = apply_overrides(raw, overrides, "--override")
    try:
        return build(raw, path.stem)
    except (ConfigError, RegistryError) as e:
        line = key_line(text, e.key)
        where = f"{path}:{line}" if line is not None else str(path)
        raise ConfigError(f"{where}: {e}", key=e.key) from None


def list_named(folder: str | Path, root: str | Path = ".") -> list[str]:
    """The names (file stems) of the YAML configs in ``root / folder``, sorted."""
    return sorted(p.stem for p in (Path(root) / folder).glob("*.yaml"))


def named_config_path(
    kind: str, folder: str | Path, name_or_path: str | Path, root: str | Path = "."
) -> Path:
    """``name_or_path`` if it names a YAML file, else ``root / folder / <name>.yaml``; a missing
    file is an error that lists the known names (did-you-mean on a typo)."""
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = Path(root) / folder / f"{name_or_path}.yaml"
    if not path.is_file():
        known, name = list_named(folder, root), str(name_or_path)
        raise ConfigError(
            f"no {kind} {name!r} ({path} not found).{did_you_mean(name, known)} "
            f"Known {kind}s: {', '.join(known) or '(none)'}"
        )
    return path
