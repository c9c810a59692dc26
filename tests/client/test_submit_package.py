"""`kernelhub submit PROBLEM model.mlpackage.zip` sends the zip as the site takes a package: `base64:<zip>`."""

import base64

import pytest

from kernelhub_client.cli import ConfigError, _read_source


def test_a_zip_is_sent_as_base64(tmp_path):
    data = b"PK\x03\x04" + bytes(range(256))
    path = tmp_path / "model.mlpackage.zip"
    path.write_bytes(data)
    source = _read_source(str(path))
    assert source.startswith("base64:") and base64.b64decode(source[len("base64:"):]) == data


def test_a_python_file_is_still_text_and_a_binary_one_explained(tmp_path):
    (tmp_path / "s.py").write_text("class ModelNew: ...\n")
    assert _read_source(str(tmp_path / "s.py")) == "class ModelNew: ...\n"
    (tmp_path / "b.py").write_bytes(b"\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8"):
        _read_source(str(tmp_path / "b.py"))
