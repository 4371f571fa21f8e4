from pricing import format_price

print(format_price(1999))
