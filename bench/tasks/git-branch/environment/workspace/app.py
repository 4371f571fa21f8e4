print("search coming soon")
