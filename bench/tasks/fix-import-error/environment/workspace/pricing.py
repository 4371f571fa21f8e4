def format_cost(cents: int) -> str:
    """``1999`` -> ``$19.99``."""
    return f"${cents // 100}.{cents % 100:02d}"
