"""Gradescope 的自动批改程序（minigpt.grading.gradescope，见「教师指南」的「在 Gradescope 上批改」）。

测试在临时目录里模拟 Gradescope 的 /autograder：zip 解压到 source/，提交放进 submission/，运行 zip 里的
run_autograder（用本项目的虚拟环境代替 setup.sh 装的那个：setup.sh 要联网下载 PyTorch，这里只核对它的内容），
再读 results/results.json。两种容器都模拟：

- 有 bubblewrap 的（这台机器本身）：学生的代码在沙箱里运行；
- 没有可用 bubblewrap 的（Docker 通常如此）：测试用 bwrap 搭一个“容器”——整个文件系统、私有的 /tmp、
  /autograder 挂在真正的 /autograder 上、bwrap 本身换成一个不可执行的文件——批改程序在里面以 root 运行，
  学生的代码换成一个普通用户号运行。

提交：参考答案（满分）、初始笔记本（未作答）、做了一半的、没有单元的、不是 JSON 的、没有笔记本的，
沙箱测试的全部恶意提交，以及一份想伪造 results.json 的。results.json 按 Gradescope 规范的字段核对，
分数与命令行批改程序对同一批笔记本的结果核对。

完整的模拟（每份一个内核）只跑有代表性的那些：未作答的与做了一半的两份只由命令行批改一次，它们的 results.json
由 run_autograder 用的同一个函数（gradescope.results_json）从命令行的结果写出，再照样核对（见 CONVERTED）。
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from support.book import REPO
from support.hostile_cells import CRASH, FORK_BOMB
from minigpt.grading import gradescope, sandbox

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
_spec = importlib.util.spec_from_file_location("generate_submissions", SUBMISSIONS / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)

KEYS = ["1a", "1b", "2a", "2b", "3", "4a", "4b", "5a", "5b"]
TOTAL = 20
# Gradescope 的 results.json 规范（gradescope-autograders 文档的 “Autograder Specifications”）里的字段
TOP_FIELDS = {"score", "execution_time", "output", "visibility", "stdout_visibility", "extra_data", "tests",
              "leaderboard"}
TEST_FIELDS = {"score", "max_score", "name", "number", "output", "tags", "visibility", "extra_data"}
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORGED_SCORE = 999


def _torch_pin() -> str:
    line = next(x for x in (REPO / "requirements.lock").read_text().splitlines() if x.startswith("torch=="))
    return line.split("==")[1].split("+")[0]


# ---------------------------------------------------------------- zip

def test_the_autograder_zip_has_setup_sh_and_run_autograder_at_its_root_and_installs_cpu_torch_first(tmp_path):
    wheel = tmp_path / "minigpt_book-9.9.9-py3-none-any.whl"
    wheel.write_bytes(b"not really a wheel")
    out = gradescope.build_zip(wheel, _torch_pin(), tmp_path / "autograder.zip")
    with zipfile.ZipFile(out) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        assert sorted(infos) == sorted(["setup.sh", "run_autograder", "README.md", wheel.name])
        for name in ("setup.sh", "run_autograder"):
            assert stat.S_IMODE(infos[name].external_attr >> 16) == 0o755, name
        setup = zf.read("setup.sh").decode()
        run = zf.read("run_autograder").decode()
        assert zf.read(wheel.name) == wheel.read_bytes()
    for name, text in (("setup.sh", setup), ("run_autograder", run)):
        assert text.startswith("#!/usr/bin/env bash\n"), name
        script = tmp_path / name
        script.write_text(text)
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0, name
    torch_line = f'"torch=={_torch_pin()}" --index-url https://download.pytorch.org/whl/cpu'
    wheel_line = f'"./{wheel.name}[grade]"'
    assert torch_line in setup and wheel_line in setup
    assert setup.index(torch_line) < setup.index(wheel_line), "CPU 版的 PyTorch 要在本书的包之前装"
    assert "-m minigpt.grading.gradescope run" in run and "-I" in run


def test_a_zip_built_twice_is_byte_identical(tmp_path):
    wheel = tmp_path / "minigpt_book-9.9.9-py3-none-any.whl"
    wheel.write_bytes(b"x")
    a = gradescope.build_zip(wheel, "2.13.0", tmp_path / "a.zip").read_bytes()
    b = gradescope.build_zip(wheel, "2.13.0", tmp_path / "b.zip").read_bytes()
    assert a == b


# ---------------------------------------------------------------- 提交

FORGE = """\
# 伪造成绩：直接写 results.json，再留一个后台进程不停地覆盖它
import json, os, subprocess, sys
target = os.path.join({results!r}, "results.json")
forged = json.dumps({{"score": {score}, "tests": []}})
try:
    with open(target, "w") as f:
        f.write(forged)
except OSError as err:
    print("写不进去：", err)
loop = ("import time\\nwhile True:\\n    try:\\n        open(%r, 'w').write(%r)\\n    except OSError:\\n        pass\\n"
        "    time.sleep(0.01)" % (target, forged))
subprocess.Popen([sys.executable, "-c", loop], start_new_session=True)
"""


def _notebooks(results_dir: str) -> dict[str, str]:
    """{名字: 笔记本的文字}：基本的几份，加上伪造 results.json 的一份（results_dir 是学生代码眼里的结果文件夹）。"""
    base = nbformat.read(generate.STUDENT, as_version=4)
    solutions = generate._tool.solutions()
    correct = generate._fill(base, solutions)
    half = generate._fill(base, {k: solutions[k] for k in KEYS[:5]})
    forge = copy.deepcopy(correct)
    forge.cells.append(nbformat.v4.new_code_cell(FORGE.format(results=results_dir, score=FORGED_SCORE)))
    out = {name: nbformat.writes(nb) for name, nb in
           {"correct": correct, "placeholders": base, "half": half, "forge": forge,
            "empty": nbformat.v4.new_notebook()}.items()}
    out["invalid_json"] = out["correct"][:700]
    return out


def _layout(root: Path, zip_path: Path, notebook: str | None, forged_before: bool = False) -> Path:
    """root/autograder：source/（zip 解压）、submission/（一份笔记本或空）、results/。"""
    ag = root / "autograder"
    (ag / "submission").mkdir(parents=True)
    (ag / "results").mkdir()
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(ag / "source")
    for name in ("setup.sh", "run_autograder"):
        (ag / "source" / name).chmod(0o755)
    if notebook is not None:
        (ag / "submission" / "homework_student.ipynb").write_text(notebook, encoding="utf-8")
    if forged_before:   # 上一次运行（或者别的什么）留下的一份假结果
        (ag / "results" / "results.json").write_text(json.dumps({"score": FORGED_SCORE}))
    return ag


def _blocked_parent(path: Path) -> Path | None:
    for p in [*reversed(path.parents), path]:
        if p.is_dir() and not p.stat().st_mode & stat.S_IXOTH:
            return p
    return None


def _container(ag: Path) -> list[str]:
    """一个没有可用 bubblewrap 的“容器”（见模块说明）：批改程序在里面是 root，/autograder 是 ag。"""
    bwrap = shutil.which("bwrap")
    cmd = [bwrap, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    for needed in (Path(sys.base_prefix), REPO):
        blocked = _blocked_parent(needed)
        if blocked is None:
            continue
        if blocked != Path("/root"):
            pytest.skip(f"{blocked} 别的用户走不进去，容器里的普通用户号运行不了 {needed} 下的 Python")
        cmd += ["--perms", "0755", "--tmpfs", "/root"]
        for parent in reversed(needed.parents[:-1]):
            if blocked in parent.parents:   # bwrap 新建的中间目录也要让别的用户走得进去
                cmd += ["--perms", "0755", "--dir", str(parent)]
        cmd += ["--ro-bind", str(needed), str(needed)]
    for needed in (Path(sys.base_prefix), REPO):
        # 仓库（和它的 .venv）可能就在 /tmp 下（例如 CI 的干净克隆）：容器私有的 /tmp 会把它盖住，挂回来
        if any(needed == t or t in needed.parents for t in (Path("/tmp"), Path("/var/tmp"))):
            cmd += ["--ro-bind", str(needed), str(needed)]
    cmd += ["--ro-bind", "/dev/null", str(Path(bwrap).resolve()),   # bwrap 还在，却不能执行
            "--bind", str(ag), "/autograder", "--unshare-pid", "--unshare-ipc", "--die-with-parent",
            "--chdir", "/autograder", "bash", "/autograder/source/run_autograder"]
    return cmd


def _run(ag: Path, in_container: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["MINIGPT_AUTOGRADER_PYTHON"] = sys.executable
    if in_container:
        cmd = _container(ag)
    else:
        env["MINIGPT_AUTOGRADER_ROOT"] = str(ag)
        cmd = ["bash", str(ag / "source" / "run_autograder")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd="/")
    path = ag / "results" / "results.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    return {"proc": proc, "data": data, "path": path, "ag": ag}


def _package_files():
    import minigpt

    root = Path(minigpt.__file__).parent
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("zip")
    wheel = out / "minigpt_book-9.9.9-py3-none-any.whl"   # 测试不运行 setup.sh，wheel 只是占位
    wheel.write_bytes(b"placeholder")
    return gradescope.build_zip(wheel, _torch_pin(), out / "autograder.zip")


@pytest.fixture(scope="module")
def runs(autograder_zip, tmp_path_factory):
    """每种情形运行一次 run_autograder（两个一起跑），外加命令行批改程序对同一批笔记本的结果。"""
    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    if os.getuid() != 0:
        pytest.skip("模拟没有沙箱的容器要以 root 运行（批改程序要换用户号）")
    package_before = _package_files()
    jobs = {}
    for mode in ("sandbox", "account"):
        root = tmp_path_factory.mktemp(f"gs-{mode}")
        for name, text in _notebooks("/autograder/results" if mode == "account" else "").items():
            if name in CONVERTED or (mode == "account" and name in ("empty", "invalid_json")):
                continue
            ag = _layout(root / name, autograder_zip, text, forged_before=(name == "forge"))
            if mode == "sandbox" and name == "forge":   # 沙箱外的结果文件夹在哪，学生的代码写的是真实路径
                (ag / "submission" / "homework_student.ipynb").write_text(
                    _notebooks(str(ag / "results"))["forge"], encoding="utf-8")
            jobs[(mode, name)] = (ag, mode == "account")
        jobs[(mode, "no_notebook")] = (_layout(root / "no_notebook", autograder_zip, None), mode == "account")
    # 换用户号时，崩溃的内核留下的进程在换新内核之前被结束（见 test_a_crashed_kernels_processes_...）
    restart = nbformat.reads(_notebooks("")["correct"], as_version=4)
    restart.cells += [nbformat.v4.new_code_cell(src) for src in (FORK_BOMB, CRASH)]
    jobs[("account", "restart")] = (_layout(tmp_path_factory.mktemp("gs-restart"), autograder_zip,
                                            nbformat.writes(restart)), True)
    hostile_root = tmp_path_factory.mktemp("gs-hostile")
    for path in sorted(SUBMISSIONS.glob("hostile_*.ipynb")):
        ag = _layout(hostile_root / path.stem, autograder_zip, path.read_text(encoding="utf-8"))
        jobs[("account", path.stem)] = (ag, True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {key: pool.submit(_run, ag, container) for key, (ag, container) in jobs.items()}
        done = {key: fut.result() for key, fut in futures.items()}
    cli_dir = tmp_path_factory.mktemp("gs-cli")
    files = []
    for name, text in _notebooks("").items():   # 伪造的那份在命令行批改时往沙箱的工作目录里写（无害）
        files.append(cli_dir / f"{name}.ipynb")
        files[-1].write_text(text, encoding="utf-8")
    report = cli_dir / "report.json"
    cli = subprocess.run([sys.executable, "-m", "minigpt.grade", *map(str, files), "--json", str(report),
                          "--jobs", "2"], capture_output=True, text=True, timeout=900, cwd=cli_dir)
    assert report.exists(), cli.stderr
    by_name = {Path(s["path"]).stem: s for s in json.loads(report.read_text(encoding="utf-8"))["submissions"]}
    return done, by_name, package_before


def _check_spec(data: dict) -> None:
    """results.json 合乎 Gradescope 的规范，而且自洽：总分是各项之和，每道小题一项。"""
    from minigpt.homework import EXERCISES

    assert set(data) <= TOP_FIELDS, set(data) - TOP_FIELDS
    assert isinstance(data["score"], (int, float)) and isinstance(data["output"], str)
    assert data["visibility"] in VISIBILITY and data["stdout_visibility"] in VISIBILITY
    assert isinstance(data["execution_time"], (int, float))
    assert [t["name"] for t in data["tests"]] == [e.title for e in EXERCISES]
    for test, exercise in zip(data["tests"], EXERCISES):
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert test["max_score"] == exercise.points
        assert test["score"] in (0, exercise.points)
        assert isinstance(test["output"], str) and test["output"]
        assert test["visibility"] in VISIBILITY
    assert data["score"] == sum(t["score"] for t in data["tests"])


# 不完整模拟、由命令行的结果经 gradescope.results_json 写出 results.json 的（run_autograder 批改之后调用的也是它）：
# 它们与参考答案走同一条路，只是分数不同；分数怎样写进 results.json 由这个函数决定
CONVERTED = ("placeholders", "half")


@pytest.fixture(scope="module")
def converted(runs) -> dict:
    """{名字: results.json}：CONVERTED 里的几份，从命令行批改的报告（SubmissionResult.from_json 读回）写出。"""
    from minigpt.grading.results import SubmissionResult

    _, cli, _ = runs
    return {name: gradescope.results_json(SubmissionResult.from_json(cli[name]), 0.0) for name in CONVERTED}


def _points(data: dict) -> dict[str, float]:
    return {t["extra_data"]["key"]: t["score"] for t in data["tests"]}


@pytest.mark.kernel
def test_every_run_exits_0_and_writes_a_results_json_per_the_specification(runs):
    done, _, _ = runs
    for key, run in done.items():
        assert run["proc"].returncode == 0, (key, run["proc"].stdout, run["proc"].stderr)
        assert run["data"] is not None, key
        _check_spec(run["data"])


@pytest.mark.kernel
def test_the_scores_are_the_command_line_graders_for_the_same_notebooks(runs, converted):
    done, cli, _ = runs
    from minigpt.homework import EXERCISES

    worth = {e.key: e.points for e in EXERCISES}
    compared = 0
    datas = [((mode, name), run["data"]) for (mode, name), run in done.items()]
    datas += [(("converted", name), data) for name, data in converted.items()]
    for (mode, name), data in datas:
        if name not in cli:
            continue
        _check_spec(data)
        expected = {k: worth[k] if v["status"] == "passed" else 0 for k, v in cli[name]["exercises"].items()}
        assert _points(data) == expected, (mode, name)
        # 无法批改的提交：命令行没有成绩（points 是 null），Gradescope 给 0 分（教师指南的对照表）
        assert data["score"] == (cli[name]["points"] if cli[name]["graded"] else 0), (mode, name)
        compared += 1
    # 完整模拟的：沙箱里 4 份（参考答案、伪造的、没有单元的、不是 JSON 的）、换用户号的 2 份（参考答案、伪造的）；
    # 由命令行的结果写出的 2 份（未作答的、做了一半的）。命令行批改的 6 份每份至少核对一次
    assert compared == 8
    assert set(cli) <= {name for (_, name), _ in datas}
    assert cli["correct"]["points"] == TOTAL and cli["placeholders"]["points"] == 0
    assert 0 < cli["half"]["points"] < TOTAL


@pytest.mark.kernel
def test_the_reference_solutions_get_full_marks_with_each_parts_checker_message(runs):
    done, _, _ = runs
    for mode in ("sandbox", "account"):
        data = done[(mode, "correct")]["data"]
        assert data["score"] == TOTAL
        assert all(t["output"].startswith("通过：✔") for t in data["tests"]), data["tests"]
    assert done[("sandbox", "correct")]["proc"].stdout.strip().endswith("沙箱里运行")
    assert "用户号" in done[("account", "correct")]["proc"].stdout


@pytest.mark.kernel
def test_empty_broken_and_missing_notebooks_get_zero_with_a_message_that_says_why(runs, converted):
    done, _, _ = runs
    placeholders = converted["placeholders"]
    assert placeholders["score"] == 0 and all(t["output"].startswith("未作答") for t in placeholders["tests"])
    for name in ("empty", "invalid_json"):
        data = done[("sandbox", name)]["data"]
        assert data["score"] == 0, name
    assert "无法批改" in done[("sandbox", "invalid_json")]["data"]["output"]
    for mode in ("sandbox", "account"):
        data = done[(mode, "no_notebook")]["data"]
        assert data["score"] == 0 and "没有 .ipynb 笔记本" in data["output"]


@pytest.mark.kernel
def test_student_code_cannot_forge_results_json(runs):
    done, _, _ = runs
    for mode in ("sandbox", "account"):
        run = done[(mode, "forge")]
        assert run["data"]["score"] == TOTAL, (mode, run["data"])   # 满分来自答案，不是伪造的 999
        info = run["path"].stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o644)
        results = run["path"].parent
        assert (results.stat().st_uid, stat.S_IMODE(results.stat().st_mode)) == (0, 0o755)
        assert sorted(p.name for p in results.iterdir()) == ["results.json"]


@pytest.mark.kernel
def test_hostile_submissions_in_a_container_without_bubblewrap_get_a_result_and_change_nothing(runs):
    done, _, package_before = runs
    hostile = {name: run for (mode, name), run in done.items() if name.startswith("hostile_")}
    assert len(hostile) == len(list(SUBMISSIONS.glob("hostile_*.ipynb"))) >= 10
    for name, run in hostile.items():
        assert run["proc"].returncode == 0 and run["data"]["score"] <= TOTAL, name
    # 学生的代码以普通用户号运行：写不了本书的包（以后每次批改都导入它）
    assert _package_files() == package_before
    import minigpt

    assert not (Path(minigpt.__file__).parent / "student_was_here.py").exists()
    # 写包那一行抛了 PermissionError，它后面的 total_params = -1 没有运行：作业 3 仍是参考答案的值
    assert _points(hostile["hostile_write_package"]["data"])["3"] == 2


@pytest.mark.kernel
def test_end_account_ends_every_process_of_the_students_user_id():
    if os.getuid() != 0:
        pytest.skip("要以 root 运行（换用户号）")
    uid = sandbox.fresh_uid()
    kids = [subprocess.Popen(["sleep", "600"], user=uid, group=uid, extra_groups=[], start_new_session=True)
            for _ in range(3)]
    try:
        assert len(gradescope._account_pids(uid)) == 3
        assert gradescope.end_account(uid) == 3
        assert gradescope._account_pids(uid) == []
        assert all(k.wait(timeout=30) == -9 for k in kids)
    finally:
        for k in kids:
            if k.poll() is None:
                k.kill()
                k.wait()


def test_the_submission_must_hold_exactly_one_notebook(tmp_path):
    assert gradescope.find_notebook(tmp_path / "nothing")[0] is None
    (tmp_path / "a.ipynb").write_text("{}")
    assert gradescope.find_notebook(tmp_path) == (tmp_path / "a.ipynb", "")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb").write_text("{}")
    assert gradescope.find_notebook(tmp_path) == (tmp_path / "a.ipynb", "")
    (tmp_path / "b.ipynb").write_text("{}")
    found, message = gradescope.find_notebook(tmp_path)
    assert found is None and "2 个笔记本" in message and "a.ipynb" in message


@pytest.mark.kernel
def test_replacing_json_dumps_does_not_change_the_answers_the_autograder_reads(runs):
    """和命令行一样：学生的代码换掉 json.dumps 想伪造答案，探针不用它（r36b F2），答案照实读回：这份的答案都对，满分。"""
    done, _, _ = runs
    tampered = [run for (mode, name), run in done.items() if name == "hostile_forged_answers"]
    assert tampered
    for run in tampered:
        data = run["data"]
        assert data["extra_data"]["graded"] is True, data
        assert all(t["score"] == t["max_score"] for t in data["tests"]), data
        assert "答案输出被改动过" not in data.get("output", "")


def test_results_in_account_mode_say_a_separate_user_id_ran_the_code_not_no_sandbox():
    """--isolation account（Gradescope 的容器里没有 bubblewrap）：学生看到的说明讲的是实际发生的事，
    不是一个谁也没有传过的命令行参数 --no-sandbox；命令行批改的 --no-sandbox 照旧说 --no-sandbox。"""
    from minigpt.grading.gradescope import results_json
    from minigpt.grading.results import ExerciseResult, SubmissionResult
    from minigpt.homework import EXERCISES

    result = SubmissionResult("s.ipynb", graded=True, sandboxed=False,
                              exercises=[ExerciseResult(e.key, e.title, "passed", "✔") for e in EXERCISES])
    account = results_json(result, 1.0, account=True)["output"]
    assert "--no-sandbox" not in account and "没有特权的用户号" in account
    assert "--no-sandbox" in results_json(result, 1.0)["output"]


@pytest.mark.kernel
def test_a_crashed_kernels_processes_are_ended_before_the_new_kernel_in_account_mode(runs):
    """--isolation account：参考答案后面 fork 出上限那么多个进程、再让内核崩溃。换内核之前，这个用户号的
    其余进程被结束，新内核起得来、重跑前面的单元：满分，不必退回崩溃前记下的答案。以前它们占满进程数上限，
    新内核起不来（教师试用报告 r36t 的 F3 在换用户号时的那一半）。"""
    done, _, _ = runs
    run = done[("account", "restart")]
    assert run["data"]["score"] == TOTAL, run["data"]
    assert "没能换上新内核" not in json.dumps(run["data"], ensure_ascii=False), run["data"]["output"]


def test_account_mode_chosen_with_isolation_account_does_not_claim_bubblewrap_is_unavailable():
    """r36t2 第 7 条：教师用 --isolation account 选了换用户号（bubblewrap 也许能用），学生看到的说明就说是选定的，
    不说“这个容器里用不了 bubblewrap”；auto 退到换用户号时照旧说容器不允许。"""
    from minigpt.grading.gradescope import results_json
    from minigpt.grading.results import ExerciseResult, SubmissionResult
    from minigpt.homework import EXERCISES

    result = SubmissionResult("s.ipynb", graded=True, sandboxed=False,
                              exercises=[ExerciseResult(e.key, e.title, "passed", "✔") for e in EXERCISES])
    chosen = results_json(result, 1.0, account=True, chosen=True)["output"]
    assert "用不了 bubblewrap" not in chosen and "--isolation account" in chosen and "没有特权的用户号" in chosen
    assert "用不了 bubblewrap" in results_json(result, 1.0, account=True)["output"]


def test_files_the_students_user_id_left_in_shared_tmp_folders_are_removed_and_nothing_else(tmp_path):
    """r36t2 第 3 条：换用户号运行时学生的代码能在共享的 /tmp 里留下文件，下一份提交会撞上它。
    remove_account_files 删掉这个用户号建的一切（也在别人能写的子文件夹里），别人的文件和符号链接指向的东西不动。"""
    from minigpt.grading import gradescope

    if os.getuid() != 0:
        pytest.skip("要以 root 把文件交给另一个用户号")
    uid = sandbox.fresh_uid()
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    keep = shared / "teachers-file"
    keep.write_text("keep")
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    open_dir = shared / "world-writable"
    open_dir.mkdir()
    open_dir.chmod(0o1777)
    made = [shared / "fill", shared / "dir-of-student", open_dir / "nested", shared / "link"]
    made[0].write_bytes(b"x")
    made[1].mkdir()
    (made[1] / "inner").write_text("x")
    made[2].write_text("x")
    made[3].symlink_to(outside)
    for p in made + [made[1] / "inner"]:
        os.lchown(p, uid, uid)
    assert gradescope.remove_account_files(uid, roots=[str(shared)]) == 4
    assert not any(p.exists() or p.is_symlink() for p in made)
    assert keep.read_text() == "keep" and outside.read_text() == "keep" and open_dir.is_dir()


@pytest.mark.kernel
def test_an_account_mode_run_leaves_nothing_in_tmp_for_the_next_submission(autograder_zip, tmp_path):
    """r36t2 第 3 条：换用户号批改一份往 /tmp、/var/tmp、/dev/shm 和它自己的 TMPDIR 里写文件的笔记本。
    之后（同一个“容器”里，下一份提交之前）这些文件都不在了，它的私有 TMPDIR 也删掉了。"""
    if sandbox.unavailable():
        pytest.skip("模拟容器要用 bubblewrap")
    if os.getuid() != 0:
        pytest.skip("模拟没有沙箱的容器要以 root 运行（批改程序要换用户号）")
    token = f"leftover-{os.getpid()}"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import os, tempfile\n"
        f"for folder in ('/tmp', '/var/tmp', '/dev/shm', tempfile.gettempdir()):\n"
        f"    open(os.path.join(folder, '{token}'), 'w').write('x')\n"
        f"os.makedirs('/tmp/{token}-dir/sub', exist_ok=True)\n"
        "print(tempfile.gettempdir())")]
    ag = _layout(tmp_path, autograder_zip, nbformat.writes(nb))
    cmd = _container(ag)
    assert cmd[-2:] == ["bash", "/autograder/source/run_autograder"]
    for shared in ("/tmp", "/var/tmp"):   # 和真的容器一样，谁都能写（bwrap 的 tmpfs 默认是 0755）
        at = next(i for i in range(len(cmd) - 1) if cmd[i:i + 2] == ["--tmpfs", shared])
        cmd[at:at] = ["--perms", "01777"]
    at = next(i for i in range(len(cmd) - 1) if cmd[i:i + 2] == ["--dev", "/dev"]) + 2
    cmd[at:at] = ["--perms", "01777", "--tmpfs", "/dev/shm"]
    cmd[-2:] = ["bash", "-c", "bash /autograder/source/run_autograder; "
                "ls -aR /tmp /var/tmp /dev/shm > /autograder/after.txt 2>&1"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["MINIGPT_AUTOGRADER_PYTHON"] = sys.executable
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd="/")
    data = json.loads((ag / "results" / "results.json").read_text(encoding="utf-8"))
    assert "用户号" in proc.stdout, proc.stdout + proc.stderr
    assert data["tests"] and "Error" not in data["output"], data["output"]   # 几个文件都写成了
    after = (ag / "after.txt").read_text()
    assert token not in after, after
    assert "minigpt-grade-" not in after, after


def test_setup_sh_and_the_zips_readme_say_a_downloaded_torch_wheel_can_replace_the_download():
    """r36t2 第 1 条：装 PyTorch 的那一行旁边写着离线的退路（事先下载好的 CPU 版 wheel 放进 zip，从文件装）。"""
    files = gradescope.autograder_files("minigpt_book-9.9.9-py3-none-any.whl", _torch_pin())
    setup = files["setup.sh"].splitlines()
    at = next(i for i, line in enumerate(setup) if '"torch==' in line)
    assert "wheel" in setup[at - 1] and "pip install ./" in setup[at - 1], setup[at - 2:at + 1]
    assert f"torch {_torch_pin()} CPU 版 wheel" in files["README.md"] and "pip install ./" in files["README.md"]
