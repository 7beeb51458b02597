"""Every missing-extra message names a command that installs the extra, and every extra that the
package names (``import_optional``, ``check_module``) exists in pyproject.toml."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from presentation_dependence import optional
from presentation_dependence.optional import (
    DISTRIBUTION,
    MissingExtraError,
    import_optional,
    install_command,
)
from presentation_dependence.requirements import check_module

tomllib = pytest.importorskip("tomllib")

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "presentation_dependence"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
CALLS = {"import_optional": 1, "check_module": 1}  # function -> positional index of ``extra``


def _loop_values(tree: ast.Module, name: str) -> list[ast.expr]:
    """The values ``name`` takes in ``for (..., name, ...) in ((...), ...)`` loops of ``tree``."""
    out: list[ast.expr] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.For) and isinstance(node.target, ast.Tuple)):
            continue
        names = [t.id if isinstance(t, ast.Name) else None for t in node.target.elts]
        if name in names and isinstance(node.iter, ast.Tuple | ast.List):
            out += [row.elts[names.index(name)] for row in node.iter.elts]
    return out


def _resolve(tree: ast.Module, node: ast.expr) -> list[str]:
    """The string values of ``node``: a literal, a module constant, or a loop over literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    assert isinstance(node, ast.Name), ast.dump(node)
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets
        ):
            return _resolve(tree, stmt.value)
    values = [v for e in _loop_values(tree, node.id) for v in _resolve(tree, e)]
    assert values, f"cannot resolve the extra {node.id!r}"
    return values


def _named_extras() -> dict[str, set[str]]:
    """``{extra: {file, ...}}`` for every import_optional / check_module call under src/."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            if node.func.id not in CALLS or path.name in ("optional.py", "requirements.py"):
                continue
            args = {k.arg: k.value for k in node.keywords}
            if len(node.args) > CALLS[node.func.id]:
                args["extra"] = node.args[CALLS[node.func.id]]
            for extra in _resolve(tree, args["extra"]):
                found.setdefault(extra, set()).add(str(path.relative_to(SRC)))
    return found


def test_every_named_extra_exists_in_pyproject() -> None:
    named = _named_extras()
    # The extras the package imports lazily or checks for.
    assert {"train", "irds", "hub", "vllm", "rankllm", "pyterrier", "teachers"} <= set(named)
    assert {"bm25", "pyserini", "analysis"} <= set(named)
    unknown = {e: sorted(files) for e, files in named.items() if e not in EXTRAS}
    assert not unknown, f"extras missing from pyproject's optional-dependencies: {unknown}"
    assert PYPROJECT["project"]["name"] == DISTRIBUTION


@pytest.mark.parametrize("extra", sorted(EXTRAS - {"dev"}))
def test_every_message_names_a_command_that_installs_the_extra(
    extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pip = f"pip install '{DISTRIBUTION}[{extra}]'"
    if extra == "rankllm":  # rank-llm's declared vLLM is not needed: it goes in without deps
        pip += " && pip install --no-deps 'rank-llm>=0.20'"
    with pytest.raises(MissingExtraError) as e:
        import_optional("surely_not_a_module_xyz", extra=extra, purpose="a feature")
    problem = check_module("surely_not_a_module_xyz", extra)
    assert problem is not None
    for message in (str(e.value), problem.fix):
        assert pip in message and "setup.sh --full" not in message
        # This test runs from a checkout: the uv command that installs it here comes along.
        if extra == "teachers":
            assert "--require-hashes -r requirements/teachers.txt" in message
        else:
            assert f"--constraint requirements/constraints.txt -e '.[{extra}]'" in message
    assert (REPO / "requirements" / "constraints.txt").is_file()
    assert (REPO / "requirements" / "teachers.txt").is_file()
    # An installed wheel (no checkout): only the pip command.
    monkeypatch.setattr(optional, "checkout_root", lambda: None)
    assert install_command(extra) == pip


def test_checkout_root_is_this_repository() -> None:
    assert optional.checkout_root() == REPO


def test_no_message_claims_setup_full_installs_an_extra() -> None:
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if "setup.sh --full installs" in p.read_text(encoding="utf-8")
    ]
    assert not offenders
