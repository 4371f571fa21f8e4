"""The theme's code palette is pygments' own style of that name, without importing pygments' style machinery."""

from __future__ import annotations

from prompt_toolkit.styles import Style, style_from_pygments_cls
from pygments.styles import get_style_by_name
from pygments.token import STANDARD_TYPES, Token, _TokenType

from dashfloat.ui._markdown import _token_class
from dashfloat.ui._theme import CODE_PALETTE, PYGMENTS_STYLE, Theme


def _every_token() -> list[_TokenType]:
    style = get_style_by_name(PYGMENTS_STYLE)
    tokens: set[_TokenType] = {*STANDARD_TYPES, *style.styles}
    stack = [Token]
    while stack:  # and every subtype pygments knows of (the lexers create more as they are imported)
        token = stack.pop()
        tokens.add(token)
        stack.extend(token.subtypes)
    return sorted(tokens)


def test_the_code_palette_colours_every_token_as_pygments_style_does() -> None:
    ours = Style(list(CODE_PALETTE))
    theirs = style_from_pygments_cls(get_style_by_name(PYGMENTS_STYLE))
    tokens = _every_token()
    assert len(tokens) > 80
    for token in tokens:
        classes = _token_class(token)  # what a highlighted code fragment carries
        assert ours.get_attrs_for_style_str(classes) == theirs.get_attrs_for_style_str(classes), token


def test_the_theme_colours_code_with_the_palette_and_drops_it_without_colour() -> None:
    keyword = _token_class(Token.Keyword)
    assert Theme().style(no_color=False).get_attrs_for_style_str(keyword).color == "fb4934"
    assert Theme().style(no_color=True).get_attrs_for_style_str(keyword).color == ""
