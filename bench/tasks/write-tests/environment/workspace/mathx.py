def clamp(value: float, low: float, high: float) -> float:
    """``value`` limited to the range ``low`` .. ``high``."""
    return max(low, min(value, high))
