"""Real test doubles shipped with the package (used by the tests, the benchmarks and the offline demo)."""

__all__ = ["sse_server"]
