import os
import pickle

import pytest
import torch

from gpu_runner.protocol import ProtocolError, load_tensors


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/kernelhub-pwned",))


def test_it_never_runs_pickled_code_from_a_child(tmp_path):
    with open(tmp_path / "out.pt", "wb") as f:
        pickle.dump([_Payload()], f)
    with pytest.raises(ProtocolError):
        load_tensors(tmp_path, "out.pt", max_bytes=1 << 20)
    assert not os.path.exists("/tmp/kernelhub-pwned")


def test_it_refuses_links_names_with_paths_and_oversized_files(tmp_path):
    torch.save([torch.zeros(1000)], tmp_path / "big.pt")
    os.symlink(tmp_path / "big.pt", tmp_path / "link.pt")
    with pytest.raises(ProtocolError, match="not a regular file"):
        load_tensors(tmp_path, "link.pt", max_bytes=1 << 20)
    with pytest.raises(ProtocolError, match="bad output file name"):
        load_tensors(tmp_path, "../big.pt", max_bytes=1 << 20)
    with pytest.raises(ProtocolError, match="over the"):
        load_tensors(tmp_path, "big.pt", max_bytes=100)
    assert load_tensors(tmp_path, "big.pt", max_bytes=1 << 20)[0].shape == (1000,)
