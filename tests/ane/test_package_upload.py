"""Uploaded zips are data: traversal, links, lies and junk are refused with a message saying what to do."""

import io
import stat
import zipfile

import pytest

from ane_runner.package import PackageError, package_spec, package_unzip
from ane_runner.validate import validate
from tests.ane.helpers import POINTWISE


def _zip(entries):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return buf.getvalue()


@pytest.mark.parametrize("name", ["../evil.txt", "/etc/evil.txt", "model.mlpackage/../../evil.txt"])
def test_it_refuses_entries_outside_the_package(name, tmp_path):
    with pytest.raises(PackageError, match="outside the package"):
        package_unzip(_zip([(zipfile.ZipInfo(name), b"x")]), tmp_path / "dest")
    assert not (tmp_path / "evil.txt").exists()


def test_it_refuses_symbolic_links(tmp_path):
    link = zipfile.ZipInfo("model.mlpackage/Manifest.json")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    with pytest.raises(PackageError, match="symbolic link"):
        package_unzip(_zip([(link, b"/etc/passwd")]), tmp_path / "dest")


def test_it_refuses_a_zip_without_a_package(tmp_path):
    with pytest.raises(PackageError, match="exactly one .mlpackage"):
        package_unzip(_zip([(zipfile.ZipInfo("notes.txt"), b"hello")]), tmp_path / "dest")


def test_it_refuses_a_manifest_pointing_outside_data(tmp_path):
    manifest = b'{"rootModelIdentifier": "a", "itemInfoEntries": {"a": {"path": "../../../etc/passwd"}}}'
    pkg = package_unzip(_zip([(zipfile.ZipInfo("m.mlpackage/Manifest.json"), manifest)]), tmp_path / "dest")
    with pytest.raises(PackageError, match="inside the package's Data/"):
        package_spec(pkg)


def test_it_reports_junk_as_an_ineligible_package():
    report, package, _ = validate(POINTWISE.read_text(), b"PK\x03\x04 this is not really a zip",
                                  solution_name="m.zip", baseline=False)
    assert report["eligible"] is False and package is None
    assert report["issues"][0]["rule"] == "package" and "zip the .mlpackage folder" in report["error"]
