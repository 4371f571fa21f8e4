def shout(text: str) -> str:
    """``text`` in capitals, with an exclamation mark."""
    return text.upper() + "!"
