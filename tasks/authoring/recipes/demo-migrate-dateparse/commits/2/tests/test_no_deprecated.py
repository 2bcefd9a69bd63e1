from pathlib import Path

import parcels


def test_no_deprecated_dateparse_calls_outside_vendor():
    package = Path(parcels.__file__).parent
    offenders = [
        f"{path.relative_to(package)}:{lineno}"
        for path in package.rglob("*.py")
        if "_vendor" not in path.parts
        for lineno, line in enumerate(path.read_text().splitlines(), start=1)
        if "parse_date(" in line
    ]
    assert offenders == [], "still calling the deprecated dateparse.parse_date()"
