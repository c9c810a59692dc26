"""Archives are checked before anything is unpacked: paths that leave the workdir, links, too many files, a
compressed bomb, binaries and anything that is not a source are refused, each with a message that says what to do.
Nothing is written to disk while reading (gpu_runner/workdir.py reads members into memory, with caps)."""

import io
import stat
import tarfile
import time
import zipfile

import pytest

from gpu_runner import workdir
from tests.workdirs.helpers import WORKDIR_CPU, tar_gz_bytes, workdir_files, zip_bytes

GOOD = workdir_files(WORKDIR_CPU)


def refused(data: bytes) -> str:
    with pytest.raises(workdir.WorkdirError) as info:
        workdir.read_archive(data)
    return str(info.value)


def test_it_refuses_a_zip_slip():
    message = refused(zip_bytes({**GOOD, "../../home/evil.py": b"x = 1\n"}))
    assert "leaves the workdir" in message and "../../home/evil.py" in message


def test_it_refuses_an_absolute_path():
    assert "absolute" in refused(zip_bytes({**GOOD, "/etc/cron.d/evil.sh": b"echo\n"}))


def test_it_refuses_a_symbolic_link_in_a_zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in GOOD.items():
            zf.writestr(name, data)
        link = zipfile.ZipInfo("kernels/secret.h")
        link.create_system = 3
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    message = refused(buffer.getvalue())
    assert "kernels/secret.h" in message and "symbolic link" in message


def test_it_refuses_links_in_a_tar():
    for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
            info = tarfile.TarInfo("kernels/secret.h")
            info.type, info.linkname = kind, "/etc/passwd"
            tf.addfile(info)
        assert "a link" in refused(buffer.getvalue())


def test_it_refuses_ten_thousand_files_before_reading_any():
    files = {**GOOD, **{f"kernels/k{i}.h": b"" for i in range(10_000)}}
    message = refused(zip_bytes(files))
    assert "10,00" in message and "at most 200 files" in message


def test_it_refuses_a_gigabyte_of_zeros_without_unpacking_it():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, data in GOOD.items():
            zf.writestr(name, data)
        with zf.open("kernels/zeros.h", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(1024):
                f.write(chunk)
    data = buffer.getvalue()
    assert len(data) < 8 << 20  # small enough to be uploaded: the check must be on what it unpacks to
    t0 = time.monotonic()
    message = refused(data)
    assert "kernels/zeros.h" in message and "1,073,741,824 bytes" in message
    assert time.monotonic() - t0 < 2  # refused from the archive's directory, not by inflating a gigabyte


def test_it_stops_a_tar_gz_bomb_at_its_cap():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        info = tarfile.TarInfo("kernels/zeros.h")
        info.size = 64 << 20
        tf.addfile(info, io.BytesIO(bytes(64 << 20)))
    message = refused(buffer.getvalue())
    assert "kernels/zeros.h" in message and "over the limit" in message


def test_it_refuses_a_shared_library_and_says_to_remove_build_outputs():
    message = refused(zip_bytes({**GOOD, "cuda_extension.so": b"\x7fELF\x02\x01\x01" + bytes(64)}))
    assert "cuda_extension.so" in message and ".so file" in message and "remove build outputs" in message


def test_it_refuses_a_binary_under_a_source_name():
    message = refused(zip_bytes({**GOOD, "kernels/fast.cpp": b"\x7fELF\x00\x00binary"}))
    assert "kernels/fast.cpp" in message and "binary" in message


def test_it_refuses_a_workdir_without_model_new():
    files = {k: v for k, v in GOOD.items() if k != "model_new.py"}
    assert "no model_new.py" in refused(zip_bytes(files))


def test_it_reads_a_good_zip_and_tar_gz_to_the_same_files_and_text():
    from_zip = workdir.read_archive(zip_bytes(GOOD, prefix="agent_workdir/"))  # one top folder is dropped
    from_tar = workdir.read_archive(tar_gz_bytes(GOOD))
    from_dir = workdir.read_directory(WORKDIR_CPU)
    assert from_zip.files == from_tar.files == from_dir.files
    assert {k: v.encode() for k, v in from_zip.files.items()} == GOOD  # byte for byte
    assert from_zip.to_bundle() == from_tar.to_bundle()
    assert workdir.parse_bundle(from_zip.to_bundle()).files == from_zip.files
    assert from_zip.compiled_sources() == ["binding.cpp", "kernels/axpby.cpp", "kernels/axpby_binding.cpp",
                                           "kernels/silu_shift.cpp", "kernels/silu_shift_binding.cpp"]
