def get_usr(user_id: int) -> dict[str, object]:
    """The user record for ``user_id``."""
    return {"id": user_id, "name": f"user{user_id}"}
