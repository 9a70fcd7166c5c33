"""The package's rooms: no module uses another module's private names (neither
``from .x import _name`` nor ``alias._name`` on a module), and no module grows past about 600
lines (each holds one concern, named in its docstring)."""
from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "src"
PACKAGE = ROOT / "dpfast"
# "About 600": a module may pass 600 by a docstring's worth, never by a second concern.
MAX_LINES = 650


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# Private attributes read by name of objects of other libraries, not of dpfast's modules.
FOREIGN = {("dpfast.releases.files", "_mmap")}     # numpy.memmap's mapping
# Compiled modules (an internal module, imported whole: its names are its own API).
COMPILED = {module_name(p) for p in PACKAGE.rglob("*.pyx")}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def absolute(current: str, is_package: bool, level: int, module: str | None) -> str:
    if level == 0:
        return module or ""
    base = current.split(".")[: None if is_package else -1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def private_uses(name: str, path: pathlib.Path) -> list[str]:
    """Where the module ``name`` reaches into another module's private names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"
    aliases: dict[str, str] = {}                 # local name -> module of the package
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute(name, is_package, node.level, node.module)
            if not source.startswith("dpfast"):
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in MODULES or full in COMPILED:
                    aliases[alias.asname or alias.name] = full
                elif private(alias.name) and source != name and source in MODULES:
                    found.append(f"{path}:{node.lineno}: from {source} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("dpfast") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            # m._x through an alias, or dpfast.sub.mod._x written out in full
            target = aliases.get(node.value.id) if isinstance(node.value, ast.Name) \
                else dotted(node.value)
            if target and target in MODULES and target != name and private(node.attr) \
                    and not private(target.rpartition(".")[2]):
                found.append(f"{path}:{node.lineno}: {target}.{node.attr}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) > 1 \
                and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and private(node.args[1].value) \
                and (name, node.args[1].value) not in FOREIGN:
            found.append(f"{path}:{node.lineno}: {node.func.id}(..., "
                         f"{node.args[1].value!r})")
    return found


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` as a dotted name, when the expression is just that."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def test_the_checker_finds_a_private_use(tmp_path):
    """The checker is not vacuous: a module that reaches into another is caught."""
    source = ("from .noise import _hidden\nfrom . import tables as _t\n_t._secret()\n"
              "from .tables import _x as y\nimport dpfast.noise\ndpfast.noise._y()\n"
              "getattr(obj, '_acct', None)\nhasattr(obj, '__len__')\n")
    path = tmp_path / "probe.py"
    path.write_text(source)
    uses = private_uses("dpfast.probe", path)
    assert len(uses) == 5, uses


def test_no_module_uses_another_modules_private_names():
    uses = [u for name, path in MODULES.items() for u in private_uses(name, path)]
    assert not uses, "\n".join(uses)


def test_no_module_is_over_about_600_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_every_module_says_what_it_holds():
    silent = [name for name, path in MODULES.items()
              if not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))]
    assert not silent, silent
