from paginate import page


def test_first_page():
    assert page(list("abcdefg"), 1, 3) == ["a", "b", "c"]


def test_last_page():
    assert page(list("abcdefg"), 3, 3) == ["g"]
