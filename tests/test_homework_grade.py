"""批改程序 python -m minigpt.grade，用 tests/fixtures/submissions/ 里的样例提交（由同目录的 generate.py 生成）。

批改程序只跑一次（整个模块共用）：全部样例 + 一个不存在的文件，--jobs 2 --timeout 4 --notebook-timeout 10
--disk 0.25（死循环的那份 4 秒后被结束；写 2 GiB 的那份在 256 MiB 处被挡住）。运行前，测试在宿主上放好恶意样例要找的东西：
/tmp 里的一个文件、一个环境变量、127.0.0.1 上的一个监听端口；运行后从沙箱外核对它们都没有被碰到。
每个测试核对一种情况的结果；提交文件在批改前后逐字节相同、修改时间不变。
沙箱起不来的机器上（没有 bubblewrap、不能建命名空间），要沙箱的测试跳过并写明原因。
"""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support.book import REPO
from support.processes import ctrl_c_reaches_it

SUBMISSIONS = REPO / "tests" / "fixtures" / "submissions"
TIMEOUT = 4
NOTEBOOK_TIMEOUT = 10
KEYS = ["1a", "1b", "2a", "2b", "3", "4a", "4b", "5a", "5b"]
TOTAL = 20  # 满分：各小题的分值（minigpt.homework.EXERCISES）之和

_spec = importlib.util.spec_from_file_location("generate_submissions", SUBMISSIONS / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def _sandbox_or_skip():
    from minigpt.grading import sandbox

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来，批改程序会拒绝运行：{reason}")


def _fingerprint(paths):
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in paths}


def _package_files():
    import minigpt

    root = Path(minigpt.__file__).parent
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def _leftover_processes():
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found += [cmd for marker in generate.LEFTOVER if marker in cmd]
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    _sandbox_or_skip()
    files = sorted(SUBMISSIONS.glob("*.ipynb"))
    before = _fingerprint(files)
    package_before = _package_files()
    out = tmp_path_factory.mktemp("grade")
    report, gradebook = out / "report.json", out / "grades.csv"
    secret = generate.secret_on_host()
    secret.__enter__()
    for f in generate.ESCAPE_FILES:
        Path(f).unlink(missing_ok=True)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # 别的工作区同时跑这个测试也能监听
    listener.bind(("127.0.0.1", generate.LISTEN_PORT))
    listener.listen(8)
    listener.setblocking(False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env[generate.SECRET_ENV] = "s3cret"
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "minigpt.grade", *map(str, files), str(SUBMISSIONS / generate.MISSING),
             "--json", str(report), "--csv", str(gradebook), "--jobs", "2", "--timeout", str(TIMEOUT),
             "--notebook-timeout", str(NOTEBOOK_TIMEOUT), "--disk", "0.25"],
            capture_output=True, text=True, timeout=1500, env=env, cwd=tmp_path_factory.mktemp("cwd"))
        try:
            conn, _ = listener.accept()
            conn.close()
            connected = True
        except BlockingIOError:
            connected = False
    finally:
        listener.close()
        secret.__exit__(None, None, None)
    escaped = [f for f in generate.ESCAPE_FILES if Path(f).exists()]
    data = json.loads(report.read_text(encoding="utf-8")) if report.exists() else None
    by_name = {Path(s["path"]).name: s for s in data["submissions"]} if data else {}
    effects = {"connected": connected, "escaped": escaped, "leftover": _leftover_processes(),
               "package_changed": _package_files() != package_before,
               "csv": gradebook.read_bytes() if gradebook.exists() else None}
    return proc, data, by_name, before, _fingerprint(files), effects


def _statuses(sub) -> dict[str, str]:
    return {k: sub["exercises"][k]["status"] for k in KEYS}


def _code_cell_of(name: str, key: str) -> int:
    """样例笔记本里第几个代码单元（从 1 数）是初始代码 key。"""
    nb = nbformat.read(SUBMISSIONS / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return next(i + 1 for i, c in enumerate(code) if f"hw-starter-{key}" in c.metadata.get("tags", []))


def test_committed_fixtures_are_what_the_generator_makes():
    expected = generate.build()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in SUBMISSIONS.glob("*.ipynb")}
    assert on_disk == expected, "样例提交已过期：运行 .venv/bin/python tests/fixtures/submissions/generate.py"
    assert not (SUBMISSIONS / generate.MISSING).exists()


def test_grader_exits_zero_and_reports_every_submission(graded):
    proc, data, by_name, *_ = graded
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    expected = {p.name for p in SUBMISSIONS.glob("*.ipynb")} | {generate.MISSING}
    assert set(by_name) == expected
    assert data["timeout_seconds"] == TIMEOUT and [e["key"] for e in data["exercises"]] == KEYS


def test_submissions_are_never_modified(graded):
    _, _, _, before, after, _ = graded
    assert before == after


def test_stdout_table_has_one_row_per_submission_with_each_exercise_status(graded):
    proc, _, by_name, *_ = graded
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("提交"))
    assert header.split() == ["提交", "1（一）", "1（二）", "2（一）", "2（二）", "3", "4（一）", "4（二）", "5（一）", "5（二）", "通过", "得分"]
    words = {"passed": "通过", "wrong": "答错", "not_attempted": "未作答", "missing": "没有这个变量",
             "error": "出错", "timeout": "超时"}
    for name, sub in by_name.items():
        row = next(line for line in lines if line.split() and line.split()[0] == name)
        # 无法批改的（文件不存在、不是 JSON）没有成绩：表里不写 0 分，JSON 里是 null（CSV 里留空）
        tally = [f"{sub['passed']}/{len(KEYS)}", f"{sub['points']}/{sub['max_points']}"] if sub["graded"] \
            else ["—", "无法批改"]
        assert row.split()[1:] == [words[s] for s in _statuses(sub).values()] + tally
        assert sub["graded"] or sub["points"] is None and sub["passed"] is None, sub


def test_correct_submission_passes_every_exercise(graded):
    sub = graded[2]["correct.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "passed") and sub["passed"] == len(KEYS)
    assert all(e["message"].startswith("✔") for e in sub["exercises"].values())


def test_placeholders_are_not_attempted(graded):
    sub = graded[2]["placeholders.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "not_attempted")
    assert all("还没有填写" in e["message"] for e in sub["exercises"].values())


@pytest.mark.parametrize("name,key,phrase", [
    ("mistakes_identity.ipynb", "1a", "还没有求和"),
    ("mistakes_identity.ipynb", "1b", "转置"),
    ("mistakes_identity.ipynb", "2a", "torch.tril 而不是 torch.triu"),
    ("mistakes_identity.ipynb", "2b", "单位矩阵"),
    ("mistakes_identity.ipynb", "3", "漏了偏置"),
    ("mistakes_identity.ipynb", "4a", "直接 view / reshape"),
    ("mistakes_identity.ipynb", "4b", "没有遮蔽"),
    ("mistakes_identity.ipynb", "5a", "忘了 γ 和 β"),
    ("mistakes_identity.ipynb", "5b", "Pre-LN"),
    ("mistakes_uniform.ipynb", "2b", "平均分配"),
    ("mistakes_unscaled.ipynb", "2b", "没有除以 √d_k"),
    ("mistakes_mask_after_softmax.ipynb", "2b", "先 softmax、再把未来位置乘 0"),
    ("types.ipynb", "3", "total_params 必须是整数"),
])
def test_typical_mistakes_are_wrong_with_the_checkers_message(graded, name, key, phrase):
    sub = graded[2][name]
    assert sub["exercises"][key]["status"] == "wrong"
    assert phrase in sub["exercises"][key]["message"]
    wrong = {key} if name != "mistakes_identity.ipynb" else set(KEYS)
    if name == "types.ipynb":
        wrong = {"3"}
    assert {k for k, s in _statuses(sub).items() if s != "passed"} == wrong


def test_numpy_and_python_number_answers_are_accepted(graded):
    sub = graded[2]["types.ipynb"]
    assert _statuses(sub) == {**dict.fromkeys(KEYS, "passed"), "3": "wrong"}


def test_redefined_checkers_and_changed_data_gain_nothing(graded):
    """cheat.ipynb 把 check_* 换成只打印“✔ 通过”的函数、把 Q、K、scores 改成全 0，答案与改过的数据自洽。"""
    sub = graded[2]["cheat.ipynb"]
    assert "✔ 作业" in (SUBMISSIONS / "cheat.ipynb").read_text(encoding="utf-8")
    assert _statuses(sub) == dict.fromkeys(KEYS, "wrong") and sub["passed"] == 0


@pytest.mark.parametrize("name,key,status,exception", [
    ("syntax_error.ipynb", "2b", "error", "SyntaxError"),
    ("sys_exit.ipynb", "3", "error", "SystemExit"),
    ("kernel_crash.ipynb", "1a", "error", "DeadKernelError"),
    ("infinite_loop.ipynb", "1b", "timeout", "CellTimeoutError"),
])
def test_broken_cells_get_their_own_status_and_the_rest_is_still_graded(graded, name, key, status, exception):
    sub = graded[2][name]
    result = sub["exercises"][key]
    assert (result["status"], result["exception"]) == (status, exception)
    assert result["cell"] == _code_cell_of(name, key)
    assert f"代码单元 {result['cell']}" in result["message"]
    others = {k: s for k, s in _statuses(sub).items() if k != key}
    assert set(others.values()) == {"passed"}, others


def test_answers_deleted_by_a_cleanup_cell_keep_their_points_and_the_cell_is_named(graded):
    """最后一个单元 del 掉了全部答案：它不是任何一道题的单元，和别的题的单元改了答案一样，不算有意改答案。"""
    sub = graded[2]["deleted_answers.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "passed") and sub["points"] == TOTAL
    nb = nbformat.read(SUBMISSIONS / "deleted_answers.ipynb", as_version=4)
    last = len([c for c in nb.cells if c.cell_type == "code"])
    assert all(f"在代码单元 {last} 里被删除了" in e["message"] and e["cell"] == last
               for e in sub["exercises"].values())


def test_a_changed_given_tensor_leads_the_message_as_in_the_notebook(graded):
    """作业 1（一）原地改了 q（Q 的一行）：之后由 Q 算的作业 1（二）答错，批改的说明和笔记本里的
    检查器一样，以“注意：你改动了题目给的 Q”开头；详情里也是这一句。"""
    proc, _, by_name, *_ = graded
    sub = by_name["changed_given_data.ipynb"]
    assert _statuses(sub)["1a"] == "passed" and _statuses(sub)["1b"] == "wrong"
    assert sub["exercises"]["1b"]["message"].startswith("注意：你改动了题目给的 Q")
    assert any(line.startswith("  1（二） 答错：注意：你改动了题目给的 Q")
               for line in _details(proc.stdout, "changed_given_data.ipynb"))


def _details(stdout: str, name: str) -> list[str]:
    """表下某份提交的详情行。"""
    after = stdout.split("\n详情", 1)[1].split(f"\n{name}\n", 1)
    if len(after) == 1:
        return []
    return list(itertools.takewhile(lambda line: line.startswith("  "), after[1].split("\n")))


def test_an_exception_in_exercise_1_leaves_untouched_later_parts_not_attempted(graded):
    proc, _, by_name, *_ = graded
    sub = by_name["error_then_untouched.ipynb"]
    assert _statuses(sub) == {"1a": "error", **dict.fromkeys(KEYS[1:], "not_attempted")}
    assert sub["exercises"]["1a"]["exception"] == "NameError"
    assert sub["exercises"]["1a"]["cell"] == _code_cell_of("error_then_untouched.ipynb", "1a")
    assert _details(proc.stdout, "error_then_untouched.ipynb") == [
        f"  1（一） 出错：{sub['exercises']['1a']['message']}",
        "  未作答：1（二）、2（一）、2（二）、3、4（一）、4（二）、5（一）、5（二）"]


def test_a_correct_answer_deleted_by_a_later_cell_keeps_its_points_and_no_earlier_cells_error(graded):
    """作业 3 做对了、被最后一个单元 del 掉（那个单元不是作业 3 的）：仍得分，说明写出删除它的单元；
    作业 1（二）的单元抛了 NameError，只记在作业 1（二）上。作业 1（一）先答错、后改对：通过，
    详情里没有它的 HomeworkWrong。"""
    proc, _, by_name, *_ = graded
    sub = by_name["deleted_after_error.ipynb"]
    assert _statuses(sub) == {**dict.fromkeys(KEYS, "passed"), "1b": "error"}
    assert sub["exercises"]["1b"]["exception"] == "NameError"
    assert sub["exercises"]["3"]["exception"] is None and "NameError" not in sub["exercises"]["3"]["message"]
    assert "w1_params、w2_params 和 total_params 都在代码单元" in sub["exercises"]["3"]["message"]
    assert "里被删除了" in sub["exercises"]["3"]["message"]
    assert any(p["exception"] == "HomeworkWrong" for p in sub["cell_problems"])   # 记在 JSON 里……
    lines = _details(proc.stdout, "deleted_after_error.ipynb")
    assert len(lines) == 2 and "HomeworkWrong" not in "".join(lines), lines   # ……表下只列两个问题，各一次
    assert lines[0].startswith("  1（二） 出错：代码单元") and lines[1].startswith("  3 通过：")


def test_an_answer_changed_in_place_by_a_later_part_keeps_its_points_and_the_cell_is_named(graded):
    """作业 5（二）里 x += …：作业 4（一）的 heads、merged 是 x 的 view，运行结束时已经变了。
    4（一）在它自己的单元之后是对的，改它的是 5（二）的单元：仍得分，说明写出是哪个单元。"""
    proc, _, by_name, *_ = graded
    sub = by_name["changed_in_place.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "passed") and sub["points"] == TOTAL
    cell = _code_cell_of("changed_in_place.ipynb", "5b")
    assert f"heads 和 merged 都在代码单元 {cell} 里被改动了" in sub["exercises"]["4a"]["message"]
    assert sub["exercises"]["4a"]["cell"] == cell
    assert any(f"代码单元 {cell} 里被改动了" in line for line in _details(proc.stdout, "changed_in_place.ipynb"))


def test_a_name_reused_by_a_later_part_keeps_the_points_and_a_deliberate_rebind_counts(graded):
    """作业 4（二）把各头的结果叫 heads、作业 5（二）重用 ln_out：4（一）、5（一）仍得分，说明写出单元；
    最后一个单元又给 weights 赋了值（这道题自己的答案，不属于别的题）：按最终值判，说明也写出单元。"""
    _, _, by_name, *_ = graded
    sub = by_name["changed_by_name.ipynb"]
    assert _statuses(sub) == {**dict.fromkeys(KEYS, "passed"), "2b": "wrong"}
    got = sub["exercises"]
    assert f"heads 在代码单元 {_code_cell_of('changed_by_name.ipynb', '4b')} 里被改动了" in got["4a"]["message"]
    assert f"ln_out 在代码单元 {_code_cell_of('changed_by_name.ipynb', '5b')} 里被改动了" in got["5a"]["message"]
    nb = nbformat.read(SUBMISSIONS / "changed_by_name.ipynb", as_version=4)
    last = len([c for c in nb.cells if c.cell_type == "code"])
    assert f"代码单元 {last} 又改了它" in got["2b"]["message"]


def test_an_empty_notebook_gets_one_detail_line(graded):
    proc, *_ = graded
    assert _details(proc.stdout, "placeholders.ipynb") == ["  未作答：全部小题"]


@pytest.mark.parametrize("name,exception,phrase", [
    ("invalid_json.ipynb", "JSONDecodeError", "不是有效的 JSON"),
    (generate.MISSING, "FileNotFoundError", "文件不存在"),
])
def test_unreadable_submissions_get_a_row(graded, name, exception, phrase):
    proc, _, by_name, *_ = graded
    sub = by_name[name]
    assert sub["graded"] is False and phrase in sub["problem"]
    assert {e["status"] for e in sub["exercises"].values()} == {"error"}
    assert {e["exception"] for e in sub["exercises"].values()} == {exception}
    assert phrase in proc.stdout


def _run_grader(args, env_path, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = str(env_path)
    return subprocess.run([sys.executable, "-m", "minigpt.grade", *args], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)


def test_without_bubblewrap_the_grader_refuses_and_says_what_to_install(tmp_path):
    """PATH 上没有 bwrap（就像 macOS 或没装 bubblewrap 的 Linux）：拒绝运行提交，退出码非 0，没有表格。"""
    (tmp_path / "bin").mkdir()
    proc = _run_grader([str(SUBMISSIONS / "correct.ipynb")], tmp_path / "bin", tmp_path)
    assert proc.returncode == 2
    assert "拒绝运行提交" in proc.stderr and "apt-get install bubblewrap" in proc.stderr
    assert "--no-sandbox" in proc.stderr and "Traceback" not in proc.stderr
    assert "提交" not in proc.stdout


def test_a_sandbox_that_cannot_start_is_refused_with_its_reason(tmp_path):
    """bwrap 在，但建不了命名空间（这里用一个照样报错退出的假 bwrap）：同样拒绝，并转述 bwrap 的话。"""
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    proc = _run_grader([str(SUBMISSIONS / "correct.ipynb")], fake.parent, tmp_path)
    assert proc.returncode == 2
    assert "启动不了" in proc.stderr and "No permissions to create new namespace" in proc.stderr
    assert "提交" not in proc.stdout


def test_no_sandbox_runs_anyway_with_one_warning(tmp_path):
    (tmp_path / "bin").mkdir()
    proc = _run_grader([str(SUBMISSIONS / "invalid_json.ipynb"), str(SUBMISSIONS / generate.MISSING), "--no-sandbox"],
                       tmp_path / "bin", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("警告：--no-sandbox") == 1
    assert "invalid_json.ipynb" in proc.stdout and "没有在沙箱里运行" in proc.stdout


# ---------------------------------------------------------------- 文件名（不启动内核：内容都是截断的 JSON）

WEIRD_NAMES = {
    "not_utf8": os.fsdecode(b"\xd5\xc5\xc8\xfd.ipynb"),   # GBK 的“张三”：Windows 上打的 zip 用 unzip 解开就是这样
    "newline": "2024001\n2024002.ipynb",
    "formula": '=HYPERLINK("https:evil.example","满分").ipynb',
    "dash": "-1+1.ipynb",
    "long": "x" * 249 + ".ipynb",                           # 255 字节，文件名能有的最长
}


def _grader_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(extra)
    return env


def test_weird_file_names_get_one_visible_row_each_and_a_csv_without_formulas(tmp_path):
    """不是 UTF-8 的名字、带换行的、像公式的、以 - 开头的、255 字节长的名字，外加一个 300 字节、打不开的路径，
    stdout 严格按 UTF-8 编码（PYTHONIOENCODING=utf-8）：没有 traceback；表里每份一行（换行写成 \\n）；
    CSV 每份一行，学号没有一格以 = 或 - 开头；JSON 里是原来的文件名，--resume 认得出它们。"""
    folder = tmp_path / "subs"
    folder.mkdir()
    files = [folder / n for n in WEIRD_NAMES.values()]
    for f in files:
        shutil.copy(SUBMISSIONS / "invalid_json.ipynb", f)
    too_long = folder / ("y" * 300 + ".ipynb")
    report, gradebook = tmp_path / "r.json", tmp_path / "g.csv"
    args = [sys.executable, "-m", "minigpt.grade", *map(str, files), str(too_long), "--json", str(report),
            "--csv", str(gradebook), "--no-sandbox"]
    env = _grader_env(PYTHONIOENCODING="utf-8")
    proc = subprocess.run(args, capture_output=True, text=True, errors="surrogateescape", env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    # 打不开的提交没有成绩：表里这一行的最后两格是“—”和“无法批改”（不是 0/9、0/20）
    rows = [line for line in proc.stdout.splitlines() if re.search(r"—\s+无法批改$", line)]
    assert len(rows) == len(files) + 1, rows
    assert not any(line.startswith("2024002.ipynb") for line in proc.stdout.splitlines())
    assert any(r.startswith("2024001\\n2024002.ipynb ") for r in rows)
    assert any(r.startswith("\\xd5\\xc5\\xc8\\xfd.ipynb ") for r in rows)
    assert max(len(r.split("  ")[0]) for r in rows) <= 60, "太长的文件名该在表里缩短"
    raw = gradebook.read_bytes().decode("utf-8-sig")
    assert len(raw.splitlines()) == 1 + len(files) + 1
    ids = [r[0] for r in csv.reader(io.StringIO(raw))][1:]
    assert not [i for i in ids if i[:1] in "=-+@"], ids
    assert "'=HYPERLINK(\"https:evil.example\",\"满分\")" in ids and "'-1+1" in ids
    assert "\\xd5\\xc5\\xc8\\xfd" in ids and "2024001\\n2024002" in ids
    subs = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    assert [Path(s["path"]).name for s in subs] == [f.name for f in files] + [too_long.name]
    assert "File name too long" in subs[-1]["problem"]
    again = subprocess.run(args + ["--resume"], capture_output=True, text=True, errors="surrogateescape",
                           env=env, cwd=tmp_path, timeout=300)
    assert again.returncode == 0 and f"{len(files)} 份沿用" in again.stderr, again.stderr[-2000:]


@pytest.mark.parametrize("flag", ["--csv", "--json"])
def test_a_submission_named_like_an_option_cannot_overwrite_a_classmates_notebook(tmp_path, flag):
    """学生把笔记本叫做 --csv=2024002.ipynb：在提交的文件夹里运行 python -m minigpt.grade *.ipynb，shell 展开成
    --csv=2024002.ipynb 2024001.ipynb 2024002.ipynb，argparse 当它是 --csv 2024002.ipynb，成绩会写到同学的笔记本上。
    批改程序拒绝运行并说明怎么办；同学的笔记本一个字节也不变。加 -- 之后三份都批改。"""
    names = [f"{flag}=2024002.ipynb", "2024001.ipynb", "2024002.ipynb"]
    for n in names:
        shutil.copy(SUBMISSIONS / "invalid_json.ipynb", tmp_path / n)
    before = (tmp_path / "2024002.ipynb").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--no-sandbox", *names], capture_output=True,
                          text=True, env=_grader_env(), cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{flag} 的文件 2024002.ipynb" in proc.stderr and "-- *.ipynb" in proc.stderr
    assert (tmp_path / "2024002.ipynb").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--no-sandbox", "--", *names],
                          capture_output=True, text=True, env=_grader_env(), cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and all(n in proc.stdout for n in names), proc.stderr[-2000:]
    assert (tmp_path / "2024002.ipynb").read_bytes() == before


def test_help_and_refusals_answer_before_torch_is_imported(tmp_path):
    """--help、选项写错、报告写不进去：批改程序在导入 torch（判分和检查器才要它，一两秒 CPU）之前就回答。
    -X importtime 把每个导入的模块记到 stderr，这里看它的清单。"""
    shutil.copy(SUBMISSIONS / "invalid_json.ipynb", tmp_path / "a.ipynb")
    for args, code in ((["--help"], 0), (["a.ipynb", "--jobs", "0"], 2),
                       (["a.ipynb", "--json", "no_such_folder/r.json"], 2)):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "minigpt.grade", *args],
                              capture_output=True, text=True, env=_grader_env(), cwd=tmp_path, timeout=120)
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                    if line.startswith("import time:")}
        assert proc.returncode == code, (args, proc.stderr[-2000:])
        assert "minigpt.grading.cli" in imported, "没有读到 -X importtime 的清单"
        assert not {"torch", "minigpt.homework", "minigpt.grading.judge"} & imported, args


@pytest.mark.parametrize("flag,target,phrase", [("--json", "no_such_folder/r.json", "不存在"),
                                                 ("--csv", ".", "是一个文件夹")])
def test_a_report_that_cannot_be_written_is_refused_before_grading(tmp_path, flag, target, phrase):
    """以前要等正在批改的提交跑完（每份可能好几分钟）才说“无法写入”，而且一份也没有记下。"""
    shutil.copy(SUBMISSIONS / "invalid_json.ipynb", tmp_path / "a.ipynb")
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--no-sandbox", "a.ipynb", flag, target],
                          capture_output=True, text=True, env=_grader_env(), cwd=tmp_path, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{flag} 的文件" in proc.stderr and phrase in proc.stderr and "作业批改" not in proc.stdout


def test_two_submissions_with_the_same_student_id_are_pointed_out(tmp_path):
    """每个学生一个文件夹、笔记本都叫 homework_student.ipynb：学号（CSV 的第一列）全都一样，成绩册只会留下一行。
    批改照常进行，开头提示哪些提交同名、该怎么办。"""
    for folder in ("2024001", "2024002"):
        (tmp_path / folder).mkdir()
        shutil.copy(SUBMISSIONS / "invalid_json.ipynb", tmp_path / folder / "homework_student.ipynb")
    proc = subprocess.run([sys.executable, "-m", "minigpt.grade", "--no-sandbox", "2024001/homework_student.ipynb",
                           "2024002/homework_student.ipynb"], capture_output=True, text=True, env=_grader_env(),
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 份提交的学号（文件名去掉 .ipynb）都是 homework_student" in proc.stderr
    assert "2024001/homework_student.ipynb、2024002/homework_student.ipynb" in proc.stderr
    assert "改名为各自的学号" in proc.stderr


# ---------------------------------------------------------------- 各种保存方式

SHAPES = ["shape_code_cell_first", "shape_nbformat44_no_ids", "shape_colab", "shape_jupyterlab_outputs",
          "shape_extra_cells", "shape_moved_cells", "shape_shadowed_builtins"]


@pytest.mark.parametrize("name", SHAPES)
def test_every_notebook_shape_with_right_answers_gets_full_marks(graded, name):
    sub = graded[2][f"{name}.ipynb"]
    assert sub["graded"] and _statuses(sub) == dict.fromkeys(KEYS, "passed"), sub
    assert sub["points"] == sub["max_points"] == TOTAL and sub["cell_problems"] == []


def test_shapes_are_what_they_claim_to_be():
    raw = {n: json.loads((SUBMISSIONS / f"{n}.ipynb").read_text(encoding="utf-8")) for n in SHAPES}
    assert raw["shape_code_cell_first"]["cells"][0]["cell_type"] == "code"
    assert raw["shape_nbformat44_no_ids"]["nbformat_minor"] == 4
    assert not any("id" in c for c in raw["shape_nbformat44_no_ids"]["cells"])
    assert raw["shape_colab"]["nbformat_minor"] == 0 and "colab" in raw["shape_colab"]["metadata"]
    outputs = [o for c in raw["shape_jupyterlab_outputs"]["cells"] for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    order = [t for c in raw["shape_moved_cells"]["cells"] for t in c.get("metadata", {}).get("tags", [])
             if t.startswith("hw-starter-")]
    assert order != sorted(order)
    last = raw["shape_shadowed_builtins"]["cells"][-1]["source"]
    last = "".join(last) if isinstance(last, list) else last
    for name in ("min", "list", "str", "type", "print", "sys.stdout"):
        assert f"\n{name} = " in last, name


# ---------------------------------------------------------------- 恶意的提交

# 名字 → (最后一个单元记下的问题种类, 异常类型, 说明里的字样)
ATTACKS = {
    "hostile_read_outside": ("error", "FileNotFoundError", generate.SECRET_PREFIX + "* 一个也没有"),
    "hostile_list_submissions": ("error", "FileNotFoundError", "没有找到别的提交"),
    "hostile_write_outside": ("error", "FileNotFoundError", "/var/tmp"),
    "hostile_write_package": ("error", "OSError", "Read-only file system"),
    "hostile_connect_loopback": ("error", "ConnectionRefusedError", "Connection refused"),
    "hostile_read_env": ("error", "KeyError", generate.SECRET_ENV),
    "hostile_memory_3gib": ("limit", "MemoryError", "超出内存上限（2 GiB）"),
    "hostile_processes_300": ("limit", "BlockingIOError", "超出进程数上限（256 个）"),
    "hostile_disk_2gib": ("limit", "OSError", "超出文件大小或磁盘上限（0.25 GiB）"),
    "hostile_many_files": ("limit", "TooManyFiles", "超出文件数上限（20000 个）"),
}


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_attack_is_stopped_reported_and_the_submission_still_graded(graded, name):
    """答案都对，最后一个单元做坏事；坏事成了就会把作业 3 改错。所以：满分，且那个单元的异常或上限记在报告里。"""
    proc, _, by_name, *_ = graded
    sub = by_name[f"{name}.ipynb"]
    assert sub["graded"] and _statuses(sub) == dict.fromkeys(KEYS, "passed"), sub
    last = len([c for c in nbformat.read(SUBMISSIONS / f"{name}.ipynb", as_version=4).cells if c.cell_type == "code"])
    kind, exception, phrase = ATTACKS[name]
    problem = next(p for p in sub["cell_problems"] if p["cell"] == last)
    assert (problem["kind"], problem["exception"]) == (kind, exception)
    assert phrase in problem["message"]
    details = proc.stdout.split("\n详情", 1)[1]
    block = details.split(f"\n{name}.ipynb\n", 1)[1].split("\n")[0]
    assert f"代码单元 {last}：{exception}" in block


def test_no_attack_has_any_effect_outside_the_sandbox(graded):
    effects = graded[5]
    assert effects["connected"] is False, "有进程连上了测试在宿主 127.0.0.1 上的监听端口"
    assert effects["escaped"] == [], effects["escaped"]
    assert effects["package_changed"] is False, "minigpt 包里的文件变了"
    assert effects["leftover"] == [], effects["leftover"]


def test_text_from_student_code_cannot_add_lines_or_terminal_controls_to_the_table(graded):
    """hostile_table_escapes 的异常：类名里有换行和一行假的成绩（correct.ipynb 0 分），说明里有 ESC 控制序列（光标上移、
    清行）和 U+202E。表里这些都写成看得见的转义：输出里没有 ESC，以 correct.ipynb 开头的只有它自己那一行。"""
    proc, _, by_name, *_ = graded
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith("correct.ipynb")]
    assert len(rows) == 1 and rows[0].split()[-1] == f"{TOTAL}/{TOTAL}", rows
    sub = by_name["hostile_table_escapes.ipynb"]
    assert sub["graded"] and _statuses(sub) == dict.fromkeys(KEYS, "passed")
    block = proc.stdout.split("\nhostile_table_escapes.ipynb\n", 1)[1].split("\n")[0]
    assert "Oops\\ncorrect.ipynb" in block and "\\x1b[3A" in block and "\\u202e" in block


def test_processes_left_running_are_ended_and_reported(graded):
    sub = graded[2]["hostile_leave_process.ipynb"]
    assert _statuses(sub) == dict.fromkeys(KEYS, "passed")
    assert any(re.search(r"还留着 \d+ 个进程，已随沙箱全部结束", n) for n in sub["notes"]), sub["notes"]
    assert graded[5]["leftover"] == []


@pytest.mark.parametrize("name", ["hostile_forged_answers", "hostile_oversized_answers"])
def test_replacing_json_dumps_neither_forges_nor_spoils_the_answers(graded, name):
    """学生的代码换掉 json.dumps，想让探针交回伪造的或 5 MB 的答案。探针用的是预热时（学生的代码运行之前）取好的
    函数（r36b F2），学生换掉的 json.dumps 碍不着它：答案照实读回，这两份的答案都对，满分。"""
    proc, _, by_name, *_ = graded
    sub = by_name[f"{name}.ipynb"]
    assert sub["graded"] and not sub["problem"] and _statuses(sub) == dict.fromkeys(KEYS, "passed"), sub
    assert "Traceback" not in proc.stdout + proc.stderr


def test_many_short_cells_past_the_notebook_timeout_are_stopped(graded):
    """30 个各睡 0.5 秒的单元插在作业 1（一）之后：合计超过 --notebook-timeout 10 秒，其后的题都是“超时”。"""
    sub = graded[2]["hostile_sleep_many_cells.ipynb"]
    assert sub["graded"]
    assert _statuses(sub) == {**dict.fromkeys(KEYS, "timeout"), "1a": "passed"}
    hit = [p for p in sub["cell_problems"] if p["kind"] == "limit"]
    assert len(hit) == 1 and hit[0]["exception"] == "NotebookTimeout"
    assert f"--notebook-timeout {NOTEBOOK_TIMEOUT}" in hit[0]["message"]
    sleeps = [i + 1 for i, c in enumerate(c for c in nbformat.read(SUBMISSIONS / "hostile_sleep_many_cells.ipynb",
                                                                   as_version=4).cells if c.cell_type == "code")
              if c.source == generate.SLEEP_CELL]
    # 每个单元睡 0.5 秒：至少睡过了 NOTEBOOK_TIMEOUT 个（半个时限）才停，而且停在某个 sleep 单元上
    assert hit[0]["cell"] in sleeps[NOTEBOOK_TIMEOUT:]


# ---------------------------------------------------------------- --jobs、--csv

def test_jobs_2_grades_two_submissions_at_the_same_time(graded):
    subs = [s for s in graded[1]["submissions"] if s["graded"]]
    spans = sorted((s["started"], s["finished"]) for s in subs)
    overlapping = sum(1 for a, b in zip(spans, spans[1:]) if b[0] < a[1])
    assert overlapping >= len(spans) // 2, spans


def test_csv_has_a_bom_an_id_column_points_per_exercise_total_and_status(graded):
    from minigpt.homework import EXERCISES

    _, _, by_name, *_ = graded
    raw = graded[5]["csv"]
    assert raw.startswith("\ufeff".encode("utf-8"))
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0] == ["学号"] + [f"{h}（{e.points} 分）" for h, e in zip(
        ["1（一）", "1（二）", "2（一）", "2（二）", "3", "4（一）", "4（二）", "5（一）", "5（二）"], EXERCISES)] + [f"总分（{TOTAL} 分）", "状态"]
    body = {r[0]: r for r in rows[1:]}
    assert set(body) == {Path(n).stem for n in by_name}
    assert body["correct"][1:] == [str(e.points) for e in EXERCISES] + [str(TOTAL), "已批改"]
    assert body["placeholders"][1:-1] == ["0"] * (len(KEYS) + 1)
    for name, sub in by_name.items():
        row = body[Path(name).stem]
        if sub["graded"]:
            assert int(row[-2]) == sub["points"] == sum(map(int, row[1:-2]))
    assert body["no_such_student"][-1].startswith("无法批改：文件不存在")
    assert body["hostile_memory_3gib"][-1] == "已批改（碰到资源上限）"


@pytest.mark.parametrize("name,phrase", [(generate.MISSING, "文件不存在"), ("invalid_json.ipynb", "不是有效的 JSON")])
def test_ungradable_submissions_have_blank_scores_and_the_reason_as_status_in_the_csv(graded, name, phrase):
    """成绩册里空着的格子是“还没有成绩”，0 分却是一个成绩：无法批改的提交各小题和总分都留空。"""
    rows = list(csv.reader(io.StringIO(graded[5]["csv"].decode("utf-8-sig"))))
    row = next(r for r in rows[1:] if r[0] == Path(name).stem)
    assert row[1:-1] == [""] * (len(KEYS) + 1)
    assert row[-1].startswith("无法批改：") and phrase in row[-1]


# ---------------------------------------------------------------- 中断与 --resume

@pytest.mark.kernel
def test_an_interrupted_run_keeps_a_valid_report_and_resume_finishes_it(tmp_path):
    """第一份（坏的 JSON，不用内核）写进报告之后按 Ctrl-C；第二份是死循环，--timeout 60 保证那时它还在运行。
    报告仍是合法的 JSON、留着第一份；--resume 沿用第一份（结束时刻不变），批改其余的。"""
    _sandbox_or_skip()
    report = tmp_path / "report.json"
    files = [str(SUBMISSIONS / n) for n in ("invalid_json.ipynb", "infinite_loop.ipynb", "placeholders.ipynb")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base = [sys.executable, "-m", "minigpt.grade", *files, "--json", str(report), "--jobs", "1"]
    proc = subprocess.Popen(base + ["--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=tmp_path, preexec_fn=ctrl_c_reaches_it)
    try:
        while proc.poll() is None:   # 等报告里出现第一份
            try:
                if json.loads(report.read_text(encoding="utf-8"))["submissions"]:
                    break
            except (OSError, ValueError):
                pass
            try:
                proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "批改被中断：完成了 1/3 份" in err and "--resume" in err and "Traceback" not in err
    first = json.loads(report.read_text(encoding="utf-8"))
    assert [Path(s["path"]).name for s in first["submissions"]] == ["invalid_json.ipynb"]

    again = subprocess.run(base + ["--timeout", str(TIMEOUT), "--resume"], capture_output=True, text=True,
                           env=env, cwd=tmp_path, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "1 份沿用" in again.stderr and "2 份要批改" in again.stderr
    done = json.loads(report.read_text(encoding="utf-8"))["submissions"]
    assert [Path(s["path"]).name for s in done] == [Path(f).name for f in files]
    assert done[0] == first["submissions"][0]
    assert done[1]["exercises"]["1b"]["status"] == "timeout"
    assert {e["status"] for e in done[2]["exercises"].values()} == {"not_attempted"}
