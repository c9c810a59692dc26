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


def test_it_refuses_a_nul_in_the_name_and_a_fifo_without_blocking(tmp_path):
    with pytest.raises(ProtocolError, match="bad output file name"):
        load_tensors(tmp_path, "out\x00.pt", max_bytes=1 << 20)
    os.mkfifo(tmp_path / "fifo.pt")
    with pytest.raises(ProtocolError, match="not a regular file"):
        load_tensors(tmp_path, "fifo.pt", max_bytes=1 << 20)


@pytest.mark.timeout(30)
def test_a_fifo_swapped_in_after_the_check_does_not_block_the_read(tmp_path, monkeypatch):
    # The child renames a FIFO over its output between the parent's lstat and open: the lstat saw a regular file.
    from gpu_runner import protocol

    torch.save([torch.zeros(4)], tmp_path / "real.pt")
    os.mkfifo(tmp_path / "out.pt")
    real_lstat = os.lstat
    monkeypatch.setattr(protocol.os, "lstat", lambda p: real_lstat(tmp_path / "real.pt"))
    with pytest.raises(ProtocolError, match="not a regular file"):
        load_tensors(tmp_path, "out.pt", max_bytes=1 << 20)
