def page(items: list[str], number: int, size: int) -> list[str]:
    """Page ``number`` (1 is the first page) of ``items``, ``size`` items per page."""
    start = number * size
    return items[start : start + size]
