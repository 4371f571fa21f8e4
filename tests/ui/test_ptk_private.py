"""The fence around prompt_toolkit's private names (dashfloat/ui/_ptk_private.py, ADR 0072): every name it relies on
is still there in the installed prompt_toolkit, as the kind of thing it uses, and no other module names a private
one."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import prompt_toolkit
import pytest
from prompt_toolkit.application import Application
from prompt_toolkit.application.current import set_app
from prompt_toolkit.data_structures import Point
from prompt_toolkit.input import DummyInput
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.containers import WindowRenderInfo
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.renderer import Renderer

import dashfloat
from dashfloat.ui import _ptk_private as ptk

FENCE = Path(ptk.__file__).resolve()
CHECKOUT = Path(dashfloat.__file__).resolve().parent.parent
WHY = "see dashfloat/ui/_ptk_private.py and ADR 0072"


def _resolve(dotted: str) -> Any:
    """A module, or a class or other attribute of one, by its dotted name."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ModuleNotFoundError(dotted)


def _parameters(function: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(function).parameters)


@pytest.fixture(scope="module")
def drawn() -> dict[type, object]:
    """Instances of the classes whose instance attributes are relied on, once a real frame is drawn."""
    top, bottom = Window(FormattedTextControl("top")), Window(FormattedTextControl("bottom", focusable=True))
    layout = Layout(HSplit([top, bottom]), focused_element=bottom)  # the cursor on the second row
    app: Application[None] = Application(layout=layout, input=DummyInput(), output=DummyOutput())
    with set_app(app):
        app.renderer.render(app, app.layout)
    assert bottom.render_info is not None
    return {Renderer: app.renderer, WindowRenderInfo: bottom.render_info}


@pytest.mark.parametrize("used", ptk.RELIED_ON, ids=lambda used: f"{used[0]}.{used[1]}")
def test_each_name_relied_on_is_there_as_it_is_used(
    used: tuple[str, str, str, tuple[str, ...] | str], drawn: dict[type, object]
) -> None:
    where, name, kind, detail = used
    owner = _resolve(where)
    said = f"prompt_toolkit {prompt_toolkit.__version__}: {where}.{name}"
    if kind == "attribute" and inspect.isclass(owner):
        assert owner in drawn, f"the test draws no {owner.__name__}: add one to the drawn() fixture"
        owner = drawn[owner]
    assert hasattr(owner, name), f"{said} is gone ({WHY})"
    found = getattr(owner, name)
    match kind:
        case "function" | "method":
            assert inspect.isfunction(found), f"{said} is no longer a plain function but {found!r} ({WHY})"
            assert _parameters(found) == detail, f"{said}'s parameters changed ({WHY})"
        case "class":
            assert inspect.isclass(found), f"{said} is no longer a class ({WHY})"
            assert _parameters(found) == detail, f"{said}'s constructor changed ({WHY})"
        case _:
            assert kind == "attribute" and isinstance(detail, str), used
            assert isinstance(found, _resolve(detail)), f"{said} is a {type(found).__name__}, not a {detail} ({WHY})"


def test_each_entry_says_what_the_check_can_check() -> None:
    """A kind the check knows; a method's parameters start with self; an attribute's type resolves to a class."""
    for where, name, kind, detail in ptk.RELIED_ON:
        assert name.isidentifier() and where.startswith("prompt_toolkit.")
        assert kind in ("function", "method", "class", "attribute")
        if kind == "attribute":
            assert isinstance(detail, str) and inspect.isclass(_resolve(detail)), name
        else:
            assert isinstance(detail, tuple) and detail, name
            assert (detail[:1] == ("self",)) == (kind == "method"), name
    assert _resolve("builtins.int") is builtins.int


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def test_prompt_toolkit_is_pinned_to_one_minor_range_which_holds_the_installed_one() -> None:
    """A new minor release may move any private name: it is taken only after this module's names are read again."""
    dependencies = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    [spec] = [dependency for dependency in dependencies if dependency.startswith("prompt_toolkit")]
    lower, upper = spec.removeprefix("prompt_toolkit").split(",")
    assert lower.startswith(">=") and upper.startswith("<"), spec
    low, high = _version(lower[2:]), _version(upper[1:])
    assert high == (low[0], low[1] + 1), f"{spec}: not one minor range"
    assert low <= _version(prompt_toolkit.__version__) < high, f"prompt_toolkit {prompt_toolkit.__version__} ∉ {spec}"


def test_moving_the_region_top_down_keeps_the_rows_below_as_drawn(drawn: dict[type, object]) -> None:
    renderer = drawn[Renderer]
    assert isinstance(renderer, Renderer)
    screen, cursor = renderer.last_rendered_screen, ptk.frame_cursor(renderer)
    assert screen is not None and cursor.y >= 1
    bottom = dict(screen.data_buffer[1])
    ptk.move_region_top_down(renderer, 1)
    shifted = renderer.last_rendered_screen
    assert shifted is not None and shifted is not screen
    assert dict(shifted.data_buffer[0]) == bottom and shifted.height == screen.height - 1
    assert ptk.frame_cursor(renderer) == Point(x=cursor.x, y=cursor.y - 1)


# ------------------------------------------------------------------ nothing else names a private one


def _private_names_of_prompt_toolkit() -> tuple[set[str], set[str]]:
    """Every single-underscore name prompt_toolkit's source defines or sets, and the methods among them that are
    plain methods (not properties) anywhere."""
    names: set[str] = set()
    methods: dict[str, bool] = {}
    for path in Path(prompt_toolkit.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
                if not isinstance(node, ast.ClassDef):
                    decorators = [ast.unparse(decorator) for decorator in node.decorator_list]
                    plain = not any("property" in name or name.endswith((".setter", ".getter")) for name in decorators)
                    methods[node.name] = methods.get(node.name, True) and plain
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    private = {name for name in names if name.startswith("_") and not name.startswith("__")}
    return private, {name for name, plain in methods.items() if plain and not name.startswith("__")}


def _ours() -> Iterator[tuple[Path, bool]]:
    """Each module to check, and whether it is the product's (a test may replace a method to spy on it)."""
    yield from ((path, True) for path in (CHECKOUT / "dashfloat").rglob("*.py"))
    for folder in ("tests/ui", "tests/tui"):
        yield from ((path, False) for path in (CHECKOUT / folder).rglob("*.py"))


def _on_self(node: ast.expr) -> bool:
    """``self.x``, ``cls.x`` or ``super().x``: a class's own attribute, whatever its base."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _uses(tree: ast.Module, private: set[str], methods: set[str], product: bool = True) -> Iterator[tuple[int, str]]:
    """(line, what) for each private prompt_toolkit name used and, in a product module that imports prompt_toolkit,
    each method of it replaced (by name: any attribute set that is a method's name in prompt_toolkit)."""
    from_ptk: set[str] = set()
    assigned: list[ast.Assign] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("prompt_toolkit"):
            from_ptk.update(alias.asname or alias.name for alias in node.names)
            yield from ((node.lineno, f"imports {alias.name}") for alias in node.names if alias.name in private)
        elif isinstance(node, ast.Import) and any(alias.name.startswith("prompt_toolkit") for alias in node.names):
            from_ptk.add("prompt_toolkit")
        elif isinstance(node, ast.Attribute) and node.attr in private and not _on_self(node.value):
            yield node.lineno, f"reads or sets {ast.unparse(node)}"
        elif isinstance(node, ast.Assign):
            assigned.append(node)
    for node in assigned if product and from_ptk else ():
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr in methods and not _on_self(target.value):
                yield node.lineno, f"replaces {ast.unparse(target)}"
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(ast.unparse(base) in from_ptk for base in node.bases):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in private:
                    yield item.lineno, f"overrides {node.name}.{item.name}"


def test_no_module_but_the_fence_names_a_private_prompt_toolkit_name() -> None:
    private, methods = _private_names_of_prompt_toolkit()
    assert {"_redraw", "_last_size", "_copy_body", "_CHAR_CACHE"} <= private and "get_size" in methods
    found = [
        f"{path.relative_to(CHECKOUT)}:{line} {what}"
        for path, product in _ours()
        if path.resolve() not in (FENCE, Path(__file__).resolve())
        for line, what in sorted(_uses(ast.parse(path.read_text(encoding="utf-8")), private, methods, product))
    ]
    assert not found, (
        "prompt_toolkit's private names (or replaced methods) outside dashfloat/ui/_ptk_private.py: move each into a "
        "named function there, with why the public API does not do and an entry in RELIED_ON (ADR 0072):\n"
        + "\n".join(found)
    )


def test_the_check_sees_each_way_of_using_a_private_name() -> None:
    private, methods = _private_names_of_prompt_toolkit()
    source = (
        "from prompt_toolkit.layout.screen import _CHAR_CACHE\n"
        "from prompt_toolkit.layout import Window\n"
        "class W(Window):\n"
        "    def _copy_body(self): ...\n"
        "    def _ours(self): return self._last_size\n"
        "app._redraw()\n"
        "output.get_size = f\n"
        "buffer.text = 'x'\n"
    )
    assert [what for _, what in sorted(_uses(ast.parse(source), private, methods))] == [
        "imports _CHAR_CACHE",
        "overrides W._copy_body",
        "reads or sets app._redraw",
        "replaces output.get_size",
    ]
    in_a_test = [what for _, what in _uses(ast.parse(source), private, methods, product=False)]
    assert "replaces output.get_size" not in in_a_test and "reads or sets app._redraw" in in_a_test
