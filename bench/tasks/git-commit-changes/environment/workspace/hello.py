print("Helo, world")
