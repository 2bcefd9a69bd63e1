from envfile import load, save


def test_save_then_load(tmp_path):
    path = tmp_path / ".env"
    save(path, {"DB_HOST": "db.internal", "DB_PORT": "5432"}, header="local settings")
    assert path.read_text() == "# local settings\nDB_HOST=db.internal\nDB_PORT=5432\n"
    assert load(path, environ={}) == {"DB_HOST": "db.internal", "DB_PORT": "5432"}


def test_load_expands_references_unless_told_not_to(tmp_path):
    path = tmp_path / ".env"
    path.write_text("DATA=${ROOT}/data\n")
    assert load(path, environ={"ROOT": "/srv"}) == {"DATA": "/srv/data"}
    assert load(path, interpolate=False) == {"DATA": "${ROOT}/data"}
