"""分叉运行器（tests/support/forkrun.py）运行一个程序，与全新的 `python 程序.py` 一样：同样的退出码、同样的输出。

test_code_cells 与 test_exercise_code 用它代替全新的 Python 进程（省下每次 import torch 的时间），
所以这里拿同一批程序对照真正的全新 Python：名字、参数、路径、环境、文件描述符、atexit、异常、退出码、torch 的随机数。
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAMS = {
    "ordinary": """import atexit, os, sys
print(__name__, sys.argv == [sys.argv[0]] and sys.argv[0].endswith('ordinary.py'))
print('cwd', os.getcwd() == os.environ['EXPECTED_CWD'], 'path0', sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print('probe', os.environ.get('FORKRUN_PROBE'), 'names', sorted(n for n in globals() if not n.startswith('__')))
print('stdin', repr(sys.stdin.read()))
sys.stdout.flush()
os.write(1, b'written to fd 1\\n')
os.write(2, b'written to fd 2\\n')
atexit.register(lambda: print('atexit ran'))
import torch
torch.manual_seed(0)
print(torch.randn(3), torch.get_default_dtype())
""",
    "exits": "import sys\nprint('before exit')\nsys.exit(3)\n",
    "exits_with_text": "import sys\nsys.exit('出错了')\n",
    "raises": "print('before error')\nraise ValueError('boom')\n",
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_forked_program_exits_and_prints_like_a_fresh_python(fork_runner, tmp_path, name):
    script = tmp_path / f"{name}.py"
    script.write_text(PROGRAMS[name], encoding="utf-8")
    env = dict(os.environ, FORKRUN_PROBE="探针", EXPECTED_CWD=str(tmp_path))
    fresh = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=300)
    forked = fork_runner.run(script, cwd=tmp_path, env=env, timeout=300)
    assert forked.returncode == fresh.returncode
    assert forked.stdout == fresh.stdout
    if name == "raises":  # 回溯里的帧不同（runpy），最后一行相同
        assert forked.stderr.splitlines()[-1] == fresh.stderr.splitlines()[-1] == "ValueError: boom"
    else:
        assert forked.stderr == fresh.stderr
    if name == "ordinary":
        assert forked.stdout.startswith("__main__ True\n")
        assert "cwd True path0 True" in forked.stdout and "probe 探针 names ['atexit', 'os', 'sys']" in forked.stdout
        assert "written to fd 1" in forked.stdout and "atexit ran" in forked.stdout
        assert forked.stderr == "written to fd 2\n"


def test_the_mother_process_has_torch_loaded_and_a_hung_program_is_stopped(fork_runner, tmp_path):
    """母体确实预先 import 了 torch（否则省不下时间）；程序超时就被结束，母体照常接着运行下一个。"""
    check = tmp_path / "check.py"
    check.write_text("import sys\nprint('torch' in sys.modules)\n", encoding="utf-8")
    assert fork_runner.run(check, cwd=tmp_path, env=dict(os.environ), timeout=60).stdout == "True\n"
    hung = tmp_path / "hung.py"
    hung.write_text("import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.1)\n", encoding="utf-8")
    with pytest.raises(subprocess.TimeoutExpired):
        fork_runner.run(hung, cwd=tmp_path, env=dict(os.environ), timeout=2)
    assert fork_runner.run(check, cwd=tmp_path, env=dict(os.environ), timeout=60).returncode == 0
    with pytest.raises(ValueError):
        fork_runner.run(check, cwd=tmp_path, env=dict(os.environ, PYTHONPATH="/elsewhere"), timeout=60)
