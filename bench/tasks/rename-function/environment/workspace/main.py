from report import title
from users import get_usr

print(get_usr(7)["id"], title(7))
