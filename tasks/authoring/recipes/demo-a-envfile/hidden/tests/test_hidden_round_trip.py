from envfile import dump, load, parse, save

AWKWARD = {
    "HASH": "s3cr#t",
    "HASH_AFTER_SPACE": "s3cr #t",
    "WORDS": "two words",
    "PADDED": "  padded  ",
    "DOUBLE": 'say "hi"',
    "SINGLE": "it's",
    "BACKSLASH": "C:\\temp\\new",
    "TRAILING_BACKSLASH": "ends with \\",
    "STARTS_WITH_HASH": "#1",
    "QUOTED_LOOKING": "'x'",
    "EMPTY": "",
}


def test_dump_then_parse_gives_every_value_back():
    for key, value in AWKWARD.items():
        assert parse(dump({key: value})) == {key: value}, dump({key: value})


def test_quoted_values_keep_their_hash_and_lose_the_comment():
    text = "DB_PASSWORD=\"s3cr#t pass\"  # production\nTOKEN='abc#123' # rotated monthly\nPORT=5432 # default\n"
    assert parse(text) == {"DB_PASSWORD": "s3cr#t pass", "TOKEN": "abc#123", "PORT": "5432"}


def test_save_then_load_gives_every_value_back(tmp_path):
    path = tmp_path / ".env"
    save(path, AWKWARD, header="generated")
    assert load(path, interpolate=False) == AWKWARD
