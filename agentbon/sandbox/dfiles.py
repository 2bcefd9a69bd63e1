"""Files in and out of a container through the engine's archive API (no tar, no shell needed in the image)."""

from __future__ import annotations

import io
import posixpath
import shutil
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker
from docker.utils import decode_json_header

from agentbon.errors import SandboxGone
from agentbon.sandbox.engine import gone_or_raise

MODE_DIR = 1 << 31  # Go's os.ModeDir, as the engine reports file modes
MODE_SYMLINK = 1 << 27
MAX_READ_BYTES = 64 << 20
"""read_file refuses bigger files (copy_out streams them to the host instead)."""


def absolute(workdir: str, path: str) -> str:
    """``path`` inside the sandbox: relative paths are under ``workdir``."""
    return posixpath.normpath(posixpath.join(workdir, path))


def _gone_if_missing(api: docker.APIClient, cid: str) -> None:
    try:
        running = api.inspect_container(cid)["State"]["Running"]
    except docker.errors.APIError as e:
        raise gone_or_raise(e, f"container {cid[:12]}") from e
    if not running:
        raise SandboxGone(f"container {cid[:12]} is not running")


def stat(api: docker.APIClient, cid: str, path: str, check_gone: bool = True) -> dict[str, Any] | None:
    """The engine's stat of ``path`` (name, size, mode, linkTarget); None when there is no such file.

    A 404 does not say whether the file or the container is missing, so the container is then inspected,
    unless ``check_gone`` is False because the caller's next engine call will tell.
    """
    response = api.head(api._url("/containers/{0}/archive", cid), params={"path": path})
    if response.status_code == 404:
        if check_gone:
            _gone_if_missing(api, cid)
        return None
    api._raise_for_status(response)
    return decode_json_header(response.headers["X-Docker-Container-Path-Stat"])


def _put(api: docker.APIClient, cid: str, data: bytes | Any) -> None:
    try:
        api.put_archive(cid, "/", data)
    except docker.errors.APIError as e:
        _gone_if_missing(api, cid)
        raise OSError(f"cannot write into container {cid[:12]}: {e}") from e


def write_file(
    api: docker.APIClient, cid: str, path: str, content: str | bytes, owner: tuple[int, int] = (0, 0)
) -> None:
    """Write ``content`` at the absolute ``path``, owned by ``owner`` (uid, gid); an existing file keeps its mode,
    new ones are 0644."""
    data = content.encode() if isinstance(content, str) else bytes(content)
    info = stat(api, cid, path, check_gone=False)  # a gone container fails the put, which then says so
    if info and info["mode"] & MODE_DIR:
        raise IsADirectoryError(f"{path} is a directory")
    member = tarfile.TarInfo(path.lstrip("/"))
    member.size, member.mtime = len(data), int(time.time())
    member.uid, member.gid = owner
    member.mode = info["mode"] & 0o7777 if info and not info["mode"] & MODE_SYMLINK else 0o644
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.addfile(member, io.BytesIO(data))
    _put(api, cid, buffer.getvalue())


def _open_archive(api: docker.APIClient, cid: str, path: str) -> tuple[Any, dict[str, Any]]:
    """The archive response for ``path`` and its stat, in one engine call; ``FileNotFoundError`` when it is not there."""
    response = api._get(
        api._url("/containers/{0}/archive", cid),
        params={"path": path},
        stream=True,
        headers={"Accept-Encoding": "identity"},
    )
    try:
        api._raise_for_status(response)
        return response, decode_json_header(response.headers["X-Docker-Container-Path-Stat"])
    except docker.errors.NotFound as e:
        if "no such container" in str(e.explanation or e).lower():
            raise SandboxGone(f"container {cid[:12]}: {e.explanation}") from e
        _gone_if_missing(api, cid)  # a stopped container still answers: say it is gone, as for any miss
        raise FileNotFoundError(f"{path}: no such file in the sandbox") from e
    except docker.errors.APIError as e:
        raise gone_or_raise(e, f"container {cid[:12]}") from e


def read_file(api: docker.APIClient, cid: str, path: str, _depth: int = 0) -> bytes:
    """The bytes of the file at the absolute ``path`` (symlinks followed)."""
    response, info = _open_archive(api, cid, path)
    if info["mode"] & (MODE_DIR | MODE_SYMLINK) or info["size"] > MAX_READ_BYTES:
        response.close()  # the stat came with the headers: do not download what is not returned
        if info["mode"] & MODE_DIR:
            raise IsADirectoryError(f"{path} is a directory")
        if info["mode"] & MODE_SYMLINK and info.get("linkTarget") and _depth < 16:
            return read_file(api, cid, posixpath.join(posixpath.dirname(path), info["linkTarget"]), _depth + 1)
        if info["mode"] & MODE_SYMLINK:
            raise OSError(f"{path}: a symbolic link loop or an unreadable link")
        raise OSError(f"{path} is {info['size']} bytes, over read_file's {MAX_READ_BYTES}; use copy_out")
    with response, tarfile.open(fileobj=io.BytesIO(response.content)) as archive:
        member = archive.next()
        handle = archive.extractfile(member) if member else None
        if handle is None:
            raise OSError(f"{path}: not a regular file")
        return handle.read()


def copy_in(api: docker.APIClient, cid: str, host_path: str, dest: str, owner: tuple[int, int] = (0, 0)) -> None:
    """Copy a host file or directory to the absolute ``dest`` in the container (parents created), owned by ``owner``
    (not by whoever owns it on the host)."""
    if not Path(host_path).exists():
        raise FileNotFoundError(f"{host_path}: no such file on the host")

    def own(member: tarfile.TarInfo) -> tarfile.TarInfo:
        member.uid, member.gid, member.uname, member.gname = *owner, "", ""
        return member

    with tempfile.TemporaryFile() as spool:
        with tarfile.open(fileobj=spool, mode="w") as archive:
            archive.add(host_path, arcname=dest.lstrip("/"), filter=own)
        spool.seek(0)
        _put(api, cid, spool)


def copy_out(api: docker.APIClient, cid: str, src: str, host_dest: str) -> None:
    """Copy the container's ``src`` (file or directory) to ``host_dest`` (replaced if it exists)."""
    if stat(api, cid, src) is None:
        raise FileNotFoundError(f"{src}: no such file in the sandbox")
    stream, _ = api.get_archive(cid, src)
    with tempfile.TemporaryFile() as spool, tempfile.TemporaryDirectory(prefix="agentbon-copy-") as tmp:
        for chunk in stream:
            spool.write(chunk)
        spool.seek(0)
        with tarfile.open(fileobj=spool) as archive:
            archive.extractall(tmp, filter="data")  # no absolute paths, no escaping links, no devices
        extracted = Path(tmp) / posixpath.basename(src.rstrip("/"))
        dest = Path(host_dest)
        if extracted.is_dir() and not extracted.is_symlink():
            shutil.copytree(extracted, dest, symlinks=True, dirs_exist_ok=True)
            return
        if dest.is_dir():  # like cp: a file copied to a directory lands inside it
            dest = dest / extracted.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(extracted), dest)
