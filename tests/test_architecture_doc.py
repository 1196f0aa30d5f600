"""docs/ARCHITECTURE.md names only what exists, so it cannot go stale
silently.

Every backticked name in the document is checked against the code:

* a module path (```kavka.storage.log```) must import; a dotted name below
  a module (```kavka.storage.log.Log.read```) must resolve by ``getattr``;
* a class name (```LogSegments```, or ```LocalLog.append``` with an
  attribute) must be defined by one of the ``kavka`` modules named in the
  same block — the paragraph, list item or table row it stands in — or,
  failing that, earlier in the same section, and the attribute must exist
  on that class (a method, property, class attribute or dataclass field);
* a repository path (```kavka/storage/index/```, ```bench/README.md```)
  must exist;
* the import-linter contracts it lists are exactly those of
  ``pyproject.toml``, and every package those contracts name is placed in
  its Layers section.

README.md's layout table, which points here, names only existing paths.

Kafka's own names (UnifiedLog, KafkaApis...) are written without
backticks in the document, so they are not taken for Kavka's.
"""

from __future__ import annotations

import importlib
import re
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"

SPAN = re.compile(r"`([^`\n]+)`")
MODULE_PATH = re.compile(r"kavka(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
CLASS_NAME = re.compile(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
REPO_PATH = re.compile(r"(?:kavka|tests|bench|docs|pipelines|tools)/[A-Za-z0-9_./-]*")
NEW_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s|^\s*\|")


def _blocks(text: str) -> list[tuple[str, str]]:
    """Paragraphs, list items and table rows (fenced code excluded), each
    with the text of its section (since the last heading) up to and
    including it."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    section: list[str] = []
    fenced = False

    def close() -> None:
        if current:
            section.append("\n".join(current))
            blocks.append(("\n".join(current), "\n".join(section)))
            current.clear()

    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("#"):
            close()
            section.clear()
        elif not line.strip() or NEW_ITEM.match(line):
            close()
            if line.strip():
                current.append(line)
        else:
            current.append(line)
    close()
    return blocks


def _spans(block: str) -> list[str]:
    return SPAN.findall(block)


def _resolve_dotted(path: str) -> object:
    """Import the longest importable module prefix of ``path`` and
    ``getattr`` the rest; raises when either fails."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            obj: object = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
                raise  # the module exists, but something it imports does not
            continue
        for attr in parts[i:]:
            obj = _attribute(obj, attr, path)
        return obj
    raise ModuleNotFoundError(path)


def _attribute(obj: object, attr: str, where: str) -> object:
    if hasattr(obj, attr):
        return getattr(obj, attr)
    fields = getattr(obj, "__dataclass_fields__", {})
    if attr in fields:
        return fields[attr]
    raise AttributeError(f"{where}: {obj!r} has no attribute {attr!r}")


def _doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def _named_modules(block: str) -> list[ModuleType]:
    found = []
    for span in _spans(block):
        for path in MODULE_PATH.findall(span):
            obj = _resolve_dotted(path)
            if isinstance(obj, ModuleType):
                found.append(obj)
            else:
                module = getattr(obj, "__module__", None)
                if module:
                    found.append(importlib.import_module(module))
    return found


def _cases() -> list[tuple[str, str, str, str]]:
    """(kind, name, block, section so far) for every checked name."""
    cases = []
    for block, section in _blocks(_doc_text()):
        for span in _spans(block):
            text = span.strip().rstrip("()")
            if MODULE_PATH.fullmatch(text):
                cases.append(("module", text, block, section))
            elif REPO_PATH.fullmatch(text):
                cases.append(("path", text, block, section))
            elif CLASS_NAME.fullmatch(text):
                cases.append(("class", text, block, section))
    return cases


def test_the_document_exists_and_names_things():
    kinds = {case[0] for case in _cases()}
    assert kinds == {"module", "path", "class"}, kinds


def _defines(module: ModuleType, name: str) -> bool:
    """``module`` defines ``name`` (or, for a package, one of its modules
    does and the package re-exports it)."""
    obj = getattr(module, name, None)
    if obj is None:
        return False
    home = getattr(obj, "__module__", "")
    return home == module.__name__ or (hasattr(module, "__path__") and home.startswith(module.__name__ + "."))


@pytest.mark.parametrize(
    ("kind", "name", "block", "section"), [pytest.param(*case, id=f"{case[0]}:{case[1]}") for case in _cases()]
)
def test_every_backticked_name_exists(kind, name, block, section):
    if kind == "module":
        _resolve_dotted(name)
    elif kind == "path":
        assert (ROOT / name).exists(), f"{name} does not exist in the repository"
    else:
        cls_name, *attrs = name.split(".")
        # The modules of its own block first, then those named before it in its section.
        modules = _named_modules(block) + _named_modules(section)
        owners = [m for m in modules if _defines(m, cls_name)]
        assert owners, (
            f"`{cls_name}` is defined in none of the modules named beside it or before it in its section "
            f"({', '.join(sorted({m.__name__ for m in modules})) or 'none'}):\n{block}"
        )
        obj = getattr(owners[0], cls_name)
        for attr in attrs:
            obj = _attribute(obj, attr, name)


def _layers_section() -> str:
    text = _doc_text()
    section = text[text.index("## Layers"):]
    return section[:section.index("\n## ", 1)]


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def test_the_layer_contracts_are_pyprojects():
    listed = set(re.findall(r'^\s*[-*] "([^"]+)"', _layers_section(), re.MULTILINE))
    assert listed == {c["name"] for c in _contracts()}


def test_every_package_of_the_contracts_is_placed_in_the_layers():
    packages = set()
    for contract in _contracts():
        for entry in contract.get("layers", []) + contract.get("source_modules", []):
            packages.update(p.strip() for p in entry.split("|") if p.strip().startswith("kavka"))
    named = set(SPAN.findall(_layers_section()))
    assert not packages - named, f"packages missing from the Layers section: {sorted(packages - named)}"


def test_the_readme_layout_names_existing_paths():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = text[text.index("## Layout"):]
    layout = layout[:layout.index("\n## ", 1)] if "\n## " in layout[1:] else layout
    assert "docs/ARCHITECTURE.md" in layout
    paths = [span for span in SPAN.findall(layout) if REPO_PATH.fullmatch(span)]
    assert paths
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README's layout names missing paths: {missing}"
