import json


def total(path):
    with open(path) as f:
        orders = json.load(f)
    return sum(order["price"] * order["quantity"] for order in orders)


if __name__ == "__main__"
    print(f"total: {total('orders.json')}")
