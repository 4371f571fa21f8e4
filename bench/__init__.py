"""DashFloat's benchmarks: `make bench` (python -m bench.run) writes bench/results.md and results.json."""
