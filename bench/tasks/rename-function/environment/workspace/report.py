from users import get_usr


def title(user_id: int) -> str:
    return str(get_usr(user_id)["name"]).title()
