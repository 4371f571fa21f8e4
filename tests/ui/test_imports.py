"""The TUI's prompt_toolkit without the modules it never uses (dashfloat/_startup/prompt_toolkit_import.py), in
fresh interpreters: the test process may have imported prompt_toolkit and wcwidth whole long before."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import dashfloat

CHECKOUT = str(Path(dashfloat.__file__).resolve().parent.parent)


def _run(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        cwd=CHECKOUT,
        env={**{k: v for k, v in os.environ.items() if k != "WCWIDTH_PYTHON"}, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_ui_imports_neither_prompt_toolkits_shortcuts_nor_wcwidths_package() -> None:
    out = _run(
        """
        import sys
        import dashfloat.ui
        import prompt_toolkit.key_binding.bindings.search  # the one of its modules that imports a sibling by name
        print("prompt_toolkit.application" in sys.modules, "prompt_toolkit.utils" in sys.modules)
        print(sorted(m for m in sys.modules if m.startswith(("prompt_toolkit.shortcuts", "prompt_toolkit.widgets"))))
        print(sorted(m for m in sys.modules if m.startswith("wcwidth")))
        """
    )
    assert out.splitlines() == ["True True", "[]", "['wcwidth._wcwidth_c']"]


def test_every_character_is_as_wide_as_the_real_wcwidth_says() -> None:
    out = _run(
        """
        import dashfloat.ui
        from prompt_toolkit.utils import get_cwidth, wcwidth as ours
        import wcwidth  # the real package, imported afterwards
        assert ours is not wcwidth.wcwidth
        differ = [c for c in range(0x110000) if ours(chr(c)) != wcwidth.wcwidth(chr(c))]
        print(differ[:10], get_cwidth("a\u4e2d\u0301\U0001f600"))
        """
    )
    assert out.split() == ["[]", "5"]


def test_the_real_packages_are_there_when_asked_for() -> None:
    out = _run(
        """
        import sys
        import dashfloat.ui
        import wcwidth
        print(wcwidth.wcswidth("\u4e2d\u6587"), "wcwidth.grapheme" in sys.modules, wcwidth.__version__)
        import prompt_toolkit
        from prompt_toolkit import Application, PromptSession  # the package's own names: its __init__ runs now
        from prompt_toolkit.application import Application as Defined
        print(Application is Defined, "prompt_toolkit.shortcuts" in sys.modules, prompt_toolkit.__version__)
        """
    )
    assert out.split() == [
        "4",
        "True",
        importlib.metadata.version("wcwidth"),
        "True",
        "True",
        importlib.metadata.version("prompt_toolkit"),
    ]


def test_wcwidths_own_switch_to_its_python_code_gets_the_whole_package() -> None:
    out = _run(
        """
        import sys
        import dashfloat.ui
        from prompt_toolkit.utils import wcwidth
        import wcwidth as package
        print(wcwidth is package.wcwidth, "wcwidth.table_wide" in sys.modules)
        """,
        WCWIDTH_PYTHON="1",
    )
    assert out.split() == ["True", "True"]


def test_minidom_is_imported_only_when_used_and_then_the_real_one() -> None:
    """prompt_toolkit's HTML() parses with xml.dom.minidom: the UI never calls it, so the module stays out (ADR 0053);
    HTML() still works through the stand-in prompt_toolkit holds, and an import afterwards gets the real module."""
    out = _run(
        """
        import sys
        import dashfloat.ui
        from prompt_toolkit.formatted_text import html
        print(html.__name__ in sys.modules, sorted(m for m in sys.modules if m.startswith("xml.dom.")))
        print(html.HTML("<b>x</b>").formatted_text == [("class:b", "x")])
        import xml.dom.minidom
        from xml.dom import minidom
        tag = minidom.parseString("<a/>").documentElement.tagName
        print(minidom is xml.dom.minidom is sys.modules["xml.dom.minidom"], tag)
        """
    )
    assert out.splitlines() == ["True ['xml.dom.domreg']", "True", "True a"]


def test_minidom_already_imported_is_left_as_it_is() -> None:
    out = _run(
        """
        import sys
        import xml.dom.minidom
        real = sys.modules["xml.dom.minidom"]
        import dashfloat.ui
        from prompt_toolkit.formatted_text import html
        print(html.minidom is real is sys.modules["xml.dom.minidom"])
        """
    )
    assert out.split() == ["True"]
