import argparse
import json
from pathlib import Path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A tiny to-do list kept in todo.json.")
    parser.add_argument("--list", action="store_true", help="print every item")
    args = parser.parse_args(argv)
    items = json.loads(Path("todo.json").read_text())
    if args.list:
        for item in items:
            print(f"- {item}")


if __name__ == "__main__":
    main()
