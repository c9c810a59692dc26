"""`kernelhub submit PROBLEM DIR`: the client packs a CUDA Agent workdir (sources only: build outputs are left out,
and it says so), the live site stores it, a real cpu runner builds its .cpp kernels into cuda_extension and the
evaluator accepts it; the submission page then says which rule set applied."""

import shutil

import httpx
import pytest

from tests.client.conftest import EVALUATION_TIMEOUT_S
from tests.client.helpers import one_json_object, run_cli
from tests.workdirs.helpers import PROBLEM_FILE, WORKDIR_CPU

pytestmark = [pytest.mark.slow, pytest.mark.timeout(EVALUATION_TIMEOUT_S + 300)]


def test_it_packs_the_directory_and_the_runner_accepts_it(site, runner_process, tmp_path):
    from apps.submissions.problems import problem_load_from_file

    problem, _ = problem_load_from_file(path=PROBLEM_FILE, hardware=["cpu"])
    workdir = tmp_path / "agent_workdir"
    shutil.copytree(WORKDIR_CPU, workdir)
    # What an agent's run leaves behind: never sent.
    (workdir / "build" / "forced_compile").mkdir(parents=True)
    (workdir / "build" / "forced_compile" / "binding.o").write_bytes(b"\x7fELF")
    (workdir / "cuda_extension.so").write_bytes(b"\x7fELF")
    code, out, err = run_cli("--url", site["url"], "--token", site["token"], "submit", "-", str(workdir),
                             "--hardware", "cpu", "--wait", "--wait-timeout", str(EVALUATION_TIMEOUT_S), "--json")
    runner_log = runner_process.log_path.read_text(errors="replace")[-4000:]
    assert code == 0, f"{err}\nRunner log:\n{runner_log}"
    assert "left out of the workdir (not sources): build/, cuda_extension.so" in err
    final = one_json_object(out)
    assert final["verdict"] == "accepted" and final["problem"] == problem.slug and final["language"] == "cpp", final
    assert final["statistics"]["rules"] == "cuda_agent"
    assert final["statistics"]["solution_format"] == "cuda_agent_workdir"
    assert [b["name"] for b in final["statistics"]["checks"]["builds"]] == ["cuda_extension"]
    page = httpx.get(f"{site['url']}/submissions/{final['id']}/").text
    assert ">CUDA Agent rules<" in page
