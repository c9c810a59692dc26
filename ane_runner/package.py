"""ML-program packages (.mlpackage directories) as uploads: safe unzip, zip, and reading the spec.

An uploaded package is untrusted data: entries are checked (no absolute paths, `..`, links, or bombs)
and the spec is parsed as protobuf without loading the model.
"""

from __future__ import annotations

import io
import json
import os
import stat
import zipfile
from pathlib import Path
from typing import Any

MAX_PACKAGE_BYTES = 256 << 20  # uncompressed, all files together
MAX_SPEC_BYTES = 64 << 20
MAX_ENTRIES = 200


class PackageError(Exception):
    """The upload is not a usable .mlpackage; the message says what to do."""


def package_unzip(data: bytes, dest: Path) -> Path:
    """Extract a zipped .mlpackage under `dest`; return the package directory."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise PackageError("the upload is not a zip file: zip the .mlpackage folder "
                           "(`cd dir && zip -r model.zip model.mlpackage`)") from exc
    infos = zf.infolist()
    if len(infos) > MAX_ENTRIES:
        raise PackageError(f"the zip has {len(infos)} entries; a package has a handful (limit {MAX_ENTRIES})")
    total = sum(i.file_size for i in infos)
    if total > MAX_PACKAGE_BYTES:
        raise PackageError(f"the package unpacks to {total} bytes; the limit is {MAX_PACKAGE_BYTES}")
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    for info in infos:
        name = info.filename
        parts = Path(name).parts
        if name.startswith(("/", "\\")) or ".." in parts or ":" in name:
            raise PackageError(f"zip entry {name!r} points outside the package: use relative paths only")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise PackageError(f"zip entry {name!r} is a symbolic link: links are not accepted")
        target = (root / name).resolve()
        if not target.is_relative_to(root):
            raise PackageError(f"zip entry {name!r} points outside the package")
        if info.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(info) as src, open(target, "wb") as out:
            copied = 0
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                if copied > info.file_size:  # a lying header: stop before it fills the disk
                    raise PackageError(f"zip entry {name!r} is larger than its header says")
                out.write(chunk)
    return package_find(root)


def package_find(root: Path) -> Path:
    """The .mlpackage directory: `root` itself or its single child holding a Manifest.json."""
    if (root / "Manifest.json").is_file():
        return root
    found = [p for p in root.rglob("Manifest.json") if p.is_file()]
    if len(found) != 1:
        raise PackageError("expected exactly one .mlpackage (a folder with Manifest.json) in the upload, "
                           f"found {len(found)}")
    return found[0].parent


def package_zip(package_dir: Path) -> bytes:
    """Zip a package directory deterministically (sorted entries, fixed times), top folder `model.mlpackage`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package_dir.rglob("*")):
            if path.is_symlink():
                raise PackageError(f"{path.name} is a symbolic link: links are not accepted")
            if path.is_file():
                info = zipfile.ZipInfo("model.mlpackage/" + path.relative_to(package_dir).as_posix(),
                                       date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def _no_links(package_dir: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(package_dir):
        for n in dirnames + filenames:
            if os.path.islink(os.path.join(dirpath, n)):
                raise PackageError(f"{n} in the package is a symbolic link: links are not accepted")


def package_spec(package_dir: Path) -> Any:
    """The root model's protobuf spec (coremltools.proto.Model_pb2.Model), parsed without loading it."""
    from coremltools.proto import Model_pb2

    _no_links(package_dir)
    try:
        manifest = json.loads((package_dir / "Manifest.json").read_text())
        root_id = manifest["rootModelIdentifier"]
        rel = manifest["itemInfoEntries"][root_id]["path"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PackageError("Manifest.json is missing or malformed: save the model with coremltools "
                           "(`model.save('model.mlpackage')`)") from exc
    data_dir = (package_dir / "Data").resolve()
    spec_path = (data_dir / rel).resolve()
    if not spec_path.is_relative_to(data_dir) or not spec_path.is_file():
        raise PackageError("the manifest's root model does not point at a file inside the package's Data/")
    if spec_path.stat().st_size > MAX_SPEC_BYTES:
        raise PackageError("the model spec is over 64 MiB: keep weights in weights/weight.bin (coremltools "
                           "does this by default)")
    spec = Model_pb2.Model()
    try:
        spec.ParseFromString(spec_path.read_bytes())
    except Exception as exc:  # protobuf's DecodeError and friends
        raise PackageError(f"the model spec does not parse: {exc}") from exc
    return spec


def package_weights_bytes(package_dir: Path) -> int:
    return sum(p.stat().st_size for p in package_dir.rglob("*") if p.is_file() and p.parent.name == "weights")
