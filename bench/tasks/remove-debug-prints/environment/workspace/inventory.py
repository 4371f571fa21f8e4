STOCK = {"apples": 12, "pears": 0, "plums": 7}


def in_stock() -> list[str]:
    names = []
    for name, count in STOCK.items():
        print(f"DEBUG: checking {name}")
        if count > 0:
            names.append(name)
    print("DEBUG: done")
    return names


if __name__ == "__main__":
    print("In stock:", ", ".join(in_stock()))
