"""Path policy: every refusal on a real tree, plus a property that nothing outside is ever returned."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashfloat.executor.path_policy import BadPath, PathEscape, inside, protected_reason, resolve


def test_plain_relative_and_absolute_inside(root: Path) -> None:
    (root / "a.txt").write_text("a")
    real = os.path.realpath(root)
    assert resolve("a.txt", str(root)) == os.path.join(real, "a.txt")
    assert resolve(str(root / "a.txt"), str(root)) == os.path.join(real, "a.txt")
    assert resolve(".", str(root)) == real
    assert resolve("new/deeper/file.txt", str(root)) == os.path.join(real, "new/deeper/file.txt")
    assert resolve("sub/../a.txt", str(root)) == os.path.join(real, "a.txt")


@pytest.mark.parametrize(
    "path",
    ["..", "../outside/secret.txt", "a/../../outside", "./../../../../etc/passwd", "/etc/passwd", "/"],
)
def test_lexical_escapes_refused(root: Path, path: str) -> None:
    with pytest.raises(PathEscape, match=r"^path escapes the working directory"):
        resolve(path, str(root))


def test_sibling_with_root_as_prefix_refused(root: Path) -> None:
    evil = str(root) + "-evil/x.txt"
    for path in ("../root-evil/x.txt", evil):
        with pytest.raises(PathEscape, match=r"^path escapes the working directory"):
            resolve(path, str(root))


def test_symlink_out_refused(root: Path) -> None:
    (root / "link").symlink_to(root.parent / "outside" / "secret.txt")
    with pytest.raises(PathEscape, match=r"^path escapes the working directory"):
        resolve("link", str(root))


def test_symlinked_intermediate_directory_refused(root: Path) -> None:
    (root / "sub").symlink_to(root.parent / "outside")
    for path in ("sub/secret.txt", "sub/not-yet/new.txt"):
        with pytest.raises(PathEscape, match=r"^path escapes the working directory"):
            resolve(path, str(root))


def test_dangling_symlink_out_refused(root: Path) -> None:
    (root / "dangle").symlink_to(root.parent / "outside" / "nope.txt")
    with pytest.raises(PathEscape, match=r"^path escapes the working directory"):
        resolve("dangle", str(root))


def test_symlink_inside_is_followed(root: Path) -> None:
    (root / "real.txt").write_text("x")
    (root / "alias").symlink_to("real.txt")
    assert resolve("alias", str(root)) == os.path.join(os.path.realpath(root), "real.txt")


def test_root_reached_through_a_symlink(root: Path) -> None:
    via = root.parent / "via"
    via.symlink_to(root)
    (root / "a.txt").write_text("a")
    assert resolve("a.txt", str(via)) == os.path.join(os.path.realpath(root), "a.txt")


def test_nul_and_empty_are_clear_errors(root: Path) -> None:
    with pytest.raises(BadPath, match="NUL"):
        resolve("a\0b", str(root))
    with pytest.raises(BadPath, match="empty"):
        resolve("", str(root))


def test_inside_is_byte_exact_on_a_slash_boundary() -> None:
    assert inside(b"/x/root", b"/x/root")
    assert inside(b"/x/root/a", b"/x/root")
    assert not inside(b"/x/root-evil", b"/x/root")
    assert not inside(b"/x/Root/a", b"/x/root")
    assert inside(b"/anything", b"/")


# ---------------------------------------------------------------- property

_PARTS = [
    "a",
    "b",
    "..",
    ".",
    "f.txt",
    "link_in",
    "link_out",
    "link_up",
    "dangle",
    "root-evil",
    "outside",
    "new",
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("policy")
    root = base / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "f.txt").write_text("f")
    (root / "link_in").symlink_to("a")
    (root / "a" / "link_out").symlink_to(base / "outside")
    (root / "a" / "b" / "link_up").symlink_to("../../..")
    (root / "dangle").symlink_to(base / "outside" / "nope")
    (base / "outside").mkdir()
    (base / "root-evil").mkdir()
    return root


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(_PARTS), min_size=1, max_size=8), absolute=st.booleans())
def test_never_resolves_outside_the_real_root(tree: Path, parts: list[str], absolute: bool) -> None:
    path = "/".join(parts)
    if absolute:
        path = str(tree.parent) + "/" + path
    real_root = os.fsencode(os.path.realpath(tree))
    try:
        resolved = resolve(path, str(tree))
    except PathEscape:
        return
    assert inside(os.fsencode(resolved), real_root)
    assert inside(os.fsencode(os.path.realpath(resolved)), real_root)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(st.sampled_from(["a", "b", "f.txt", "new", "."]), min_size=1, max_size=6))
def test_plain_names_are_never_refused(tree: Path, parts: list[str]) -> None:
    resolved = resolve("/".join(parts), str(tree))
    assert resolved == os.path.normpath(os.path.join(os.path.realpath(tree), *parts))


def test_trailing_slash_must_name_a_directory(root: Path) -> None:
    (root / "f").write_text("x")
    (root / "d").mkdir()
    with pytest.raises(BadPath, match="ends in /"):
        resolve("f/", str(root))
    with pytest.raises(BadPath, match="ends in /"):
        resolve("newdir/", str(root))
    assert resolve("d/", str(root)) == os.path.realpath(root / "d")


def test_unencodable_path_is_a_clear_error(root: Path) -> None:
    with pytest.raises(BadPath, match="not encodable"):
        resolve("\ud800", str(root))


@pytest.mark.parametrize(
    ("located", "protected"),
    [
        (b".git/hooks/pre-commit", True),
        (b".git/config", True),
        (b".git", True),
        (b"vendor/lib/.git/config", True),  # a nested repository's too
        (b"src/app.py", False),
        (b".gitignore", False),
        (b"docs/.github/workflows/ci.yml", False),
        (b"a.git/x", False),
    ],
)
def test_what_is_protected(located: bytes, protected: bool) -> None:
    assert bool(protected_reason(located)) == protected
