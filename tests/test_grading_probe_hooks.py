"""学生的钩子在探针运行时改答案（教师试用报告 r36b 的 F2）。

以前探针是一个普通的代码单元：IPython 的输入转换器、AST 转换器、pre/post_run_cell 事件都看得到、改得了它，
它用的 builtins.globals、json 也是学生换得掉的。h12 用一个输入转换器改写探针，让错的 score 拿了满分。
现在探针在预热时（学生的代码运行之前）装好，经 comm_open 消息直接调用，答案带 HMAC。

每一份提交：最后一个单元把 score 改错（笔记本里看得见的代码是错的），前面一个单元装一个钩子，
只在“不是学生单元的请求”（也就是探针）运行时把 score 改成正确的值。批改必须判 1（一） 答错。
"""

from __future__ import annotations

import copy

import nbformat
import pytest

from support.book import REPO

CORRECT = REPO / "tests" / "fixtures" / "submissions" / "correct.ipynb"

# 只在探针运行时伪造：当前处理的请求不是一个有代码的 execute_request，或者代码里有 minigpt（旧的探针单元）
FORGE = '''\
import builtins, sys, json, ast
ip = get_ipython()
def at_probe():
    p = ip.kernel.get_parent("shell") or {}
    code = (p.get("content") or {}).get("code", "")
    return p.get("msg_type") != "execute_request" or not code.strip() or "minigpt" in code
def forge(*args, **kwargs):
    if at_probe():
        ns = ip.user_ns
        ns["score"] = (ns["q"] * ns["k"]).sum()
'''

HOOKS = {
    "input_transformers_cleanup": "ip.input_transformers_cleanup.append(lambda lines: (forge(), lines)[1])",
    "input_transformers_post": "ip.input_transformers_post.append(lambda lines: (forge(), lines)[1])",
    "ast_transformers": '''\
class T(ast.NodeTransformer):
    def visit_Module(self, node):
        forge()
        return node
ip.ast_transformers.append(T())''',
    "pre_run_cell": 'ip.events.register("pre_run_cell", lambda info: forge())',
    "post_run_cell": 'ip.events.register("post_run_cell", lambda result: forge())',
    "pre_execute": 'ip.events.register("pre_execute", forge)',
    "post_execute": 'ip.events.register("post_execute", forge)',
    "displayhook": '''\
old_hook = sys.displayhook
sys.displayhook = lambda value: (forge(), old_hook(value))''',
    "excepthook": '''\
sys.excepthook = lambda *a: forge()
ip.set_custom_exc((Exception,), lambda *a, **k: forge())''',
    "builtins": '''\
real_globals, real_print = builtins.globals, builtins.print
def fake_globals():
    forge()
    return real_globals()
def fake_print(*a, **k):
    forge()
    return real_print(*a, **k)
builtins.globals, builtins.print = fake_globals, fake_print''',
    "json_module": '''\
class FakeJson:
    def __getattr__(self, name):
        forge()
        return getattr(json, name)
    def dumps(self, obj, *a, **k):
        if isinstance(obj, dict) and "score" in obj:
            obj = dict(obj, score={"kind": "float", "value": float((q * k).sum())})
        return json.dumps(obj, *a, **k)
sys.modules["json"] = FakeJson()''',
    "settrace": '''\
def tracer(frame, event, arg):
    forge()
    return None
sys.settrace(tracer)''',
    "audit_hook": "sys.addaudithook(lambda event, args: forge())",
}


def _submission(tmp_path, name: str, hook: str):
    nb = copy.deepcopy(nbformat.read(CORRECT, as_version=4))
    nb.cells.append(nbformat.v4.new_code_cell(FORGE + hook))
    nb.cells.append(nbformat.v4.new_code_cell("score = score + 1  # 笔记本里看得见的答案是错的"))
    path = tmp_path / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.kernel
@pytest.mark.parametrize("name", sorted(HOOKS))
def test_a_hook_that_changes_the_answer_only_while_the_probe_runs_does_not_earn_the_mark(tmp_path, name):
    from minigpt.grading import sandbox
    from minigpt.grading.judge import grade_submission

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    path = _submission(tmp_path, name, HOOKS[name])
    result = grade_submission(path, sandbox.Limits(timeout=30, notebook_timeout=200))
    statuses = {e.key: e.status for e in result.exercises}
    assert statuses.get("1a") != "passed", (name, result.problem, result.exercises)


@pytest.mark.kernel
def test_a_correct_mask_stored_as_a_sparse_tensor_is_graded_like_the_dense_one(tmp_path):
    """r36b F3（h22）：旧探针读稀疏张量时出错，整份提交 0 分，还说成“答案输出被改动过”。"""
    from minigpt.grading import sandbox
    from minigpt.grading.judge import grade_submission

    reason = sandbox.unavailable()
    if reason:
        pytest.skip(f"这台机器上沙箱起不来：{reason}")
    nb = copy.deepcopy(nbformat.read(CORRECT, as_version=4))
    nb.cells.append(nbformat.v4.new_code_cell("mask = mask.to_sparse()"))
    path = tmp_path / "sparse_mask.ipynb"
    nbformat.write(nb, path)
    result = grade_submission(path, sandbox.Limits(timeout=30, notebook_timeout=200))
    assert not result.problem and all(e.status == "passed" for e in result.exercises), result
