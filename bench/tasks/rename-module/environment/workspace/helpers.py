def banner(text: str) -> str:
    """``text`` between two rules of its own width."""
    rule = "=" * len(text)
    return f"{rule}\n{text}\n{rule}"
