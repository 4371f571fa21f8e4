"""The command line as a user meets it: --version, --help, and errors that name what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dashfloat import __version__
from dashfloat.cli import build_parser


def dashfloat(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dashfloat", *args], capture_output=True, text=True, timeout=20, env=env
    )


def test_version() -> None:
    result = dashfloat("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"dashfloat {__version__}"


def test_help_lists_every_flag_on_one_line_each() -> None:
    lines = dashfloat("--help").stdout.splitlines()
    for action in build_parser()._actions:
        if not action.option_strings:
            continue
        [line] = [ln for ln in lines if ln.lstrip().startswith(action.option_strings[0])]
        assert action.help and action.help.replace("%%", "%") in line, line  # the whole help on the flag's line


def test_a_bad_config_file_names_the_file_and_the_field(isolated_env: dict[str, str], tmp_path: Path) -> None:
    config = tmp_path / "cfg" / "dashfloat" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[providers.local]\nbase_url = 5\n")
    result = dashfloat("-p", "hi", env=isolated_env)
    assert result.returncode == 2
    assert result.stderr.strip() == f"dashfloat: {config}: providers.local.base_url: expected str, got int"
    assert "Traceback" not in result.stderr


def test_an_unknown_provider_is_a_usage_error(isolated_env: dict[str, str]) -> None:
    result = dashfloat("--provider", "nope", "-p", "hi", env=isolated_env)
    assert result.returncode == 2 and "nope" in result.stderr and "Traceback" not in result.stderr


def test_ctrl_c_before_the_ui_took_over_exits_130_without_a_traceback() -> None:
    program = (
        "import dashfloat.cli as cli\n"
        "def interrupted() -> int:\n"
        "    raise KeyboardInterrupt\n"
        "cli.main = interrupted\n"
        "cli.entry()\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=20)
    assert result.returncode == 130
    assert result.stderr == ""


def test_ctrl_c_while_the_command_line_is_still_being_imported_exits_130_quietly() -> None:
    """The window before dashfloat.cli has loaded: the console script's first module guards it."""
    script = (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def interrupted(name, *args, **kwargs):\n"
        "    if name == 'dashfloat.cli':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = interrupted\n"
        "from dashfloat._entry import entry\n"
        "entry()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "")
