"""答案以纯数据传回：学生内核里的探针把答案变量写成 JSON，
批改程序读回并逐项核对（见「教师指南」）。

JSON 读的时候不会执行任何代码（不用 pickle，也不用 torch.load）。
答案最多 ``MAX_ANSWER_BYTES``；格式哪里不对（被学生伪造、截断、太大），
就整份提交“出错”，不会通过，也不会抛出异常。
"""

from __future__ import annotations

import json
import math

MAX_ANSWER_BYTES = 1_000_000
# 张量、列表最多这么多个元素（作业的答案都只有几个到几十个数）
MAX_ELEMENTS = 4096
# 列表最多嵌套这么多层（和张量的维数上限一样：heads.tolist() 是四层）
MAX_DEPTH = 8
DTYPES = {"float16", "bfloat16", "float32", "float64",
          "int8", "int16", "int32", "int64", "uint8", "bool"}


class AnswerFileError(Exception):
    """答案文件不合格（不是批改程序自己写出的样子）。"""


MARKER = "MINIGPT-GRADE-ANSWERS:"
# 批改时，runner 每次运行探针都在标记后面加一个新的随机数（nonce）：
# 学生的代码事先不知道它，打印一行固定的 MINIGPT-GRADE-ANSWERS:… 冒充不了探针。
# 带这个 nonce 的行只能有一行，多了就是输出被改动过。


def new_nonce() -> str:
    import secrets

    return secrets.token_hex(16)

# 在学生的内核里运行：把答案变量写成一行 JSON（只含数字、字符串、列表和张量的数据），
# 打印到这个单元的输出里（经内核的消息通道传给 runner，不占学生能写满的磁盘）。
# 探针里的内置函数都从 builtins 模块取
# （学生的 min = …、list = …、print = … 挡不住它），
# 变量从调用者真正的全局字典取（不经学生能改名的 globals）；
# to_kernel 时经内核的消息通道送出，不经学生能换掉的 sys.stdout
# （sys.stdout = io.StringIO() 也挡不住）。
PROBE = r"""
def __minigpt_grade_probe(__names, __limit=%(limit)d):
    import builtins as __b, json, sys, torch
    (abs, bool, Exception, float, int, isinstance, len,
     list, min, print, repr, str, tuple, type) = (
        __b.abs, __b.bool, __b.Exception, __b.float, __b.int, __b.isinstance, __b.len,
        __b.list, __b.min, __b.print, __b.repr, __b.str, __b.tuple, __b.type)
    ok = %(dtypes)r
    budget = [__limit * 4]          # 所有答案合起来最多这么多个元素
    def conv(v, depth=0):
        budget[0] -= 1
        if budget[0] < 0:
            return {"kind": "opaque", "type": type(v).__name__[:40],
                    "repr": "（答案太大，没有取回）"}
        if v is None:
            return {"kind": "none"}
        if v is ...:
            return {"kind": "ellipsis"}
        module = type(v).__module__ or ""
        if module.startswith("numpy"):
            if type(v).__name__ == "ndarray" and v.dtype.kind in "biuf":
                v = torch.from_numpy(v.copy())
            elif type(v).__name__ != "ndarray" and v.dtype.kind in "biuf":
                v = v.item()
        if isinstance(v, torch.Tensor):
            v = v.detach().as_subclass(torch.Tensor)
            dtype = str(v.dtype).replace("torch.", "")
            if v.device.type == "meta":
                return {"kind": "opaque", "type": "Tensor",
                        "repr": "meta 设备上的张量（没有数据）"}
            if dtype not in ok or v.numel() > min(__limit, budget[0]) or v.dim() > 8:
                return {"kind": "opaque", "type": "Tensor",
                        "repr": f"tensor(形状 {tuple(v.shape)}，{dtype})"}
            budget[0] -= v.numel()
            return {"kind": "tensor", "dtype": dtype, "shape": list(v.shape),
                    "data": v.cpu().reshape(-1).tolist()}
        if type(v) is bool:
            return {"kind": "bool", "value": v}
        if type(v) is int and abs(v) < 2**63:
            return {"kind": "int", "value": v}
        if type(v) is float:
            return {"kind": "float", "value": v}
        if type(v) is str:
            return {"kind": "str", "value": v[:200]}
        if (type(v) in (list, tuple) and depth < %(depth)d
                and len(v) <= min(__limit, budget[0])):
            items = [conv(x, depth + 1) for x in v]
            return {"kind": type(v).__name__, "items": items}
        try:
            text = repr(v)[:80]
        except Exception:
            text = "?"
        return {"kind": "opaque", "type": type(v).__name__[:40], "repr": text}
    g = __b.globals()
    out = {n: (conv(g[n]) if n in g else {"kind": "missing"}) for n in __names}
    text = "\n" + %(marker)r + json.dumps(out) + "\n"
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    kernel = __b.getattr(shell, "kernel", None) if %(to_kernel)r else None
    if kernel is None:
        print(text, end="", flush=True)
        return
    try:
        sys.stdout.flush()          # 学生先前打印、还没送出的文字排在答案前面
    except Exception:
        pass
    kernel.session.send(kernel.iopub_socket, "stream",
                        {"name": "stdout", "text": text}, kernel.get_parent("shell"))
__minigpt_grade_probe(%(names)r)
del __minigpt_grade_probe
"""


def _marker(nonce: str) -> str:
    return f"{MARKER}{nonce}:" if nonce else MARKER


def probe_source(names: list[str], nonce: str = "", to_kernel: bool = False) -> str:
    """探针的源代码。nonce：批改程序每次运行新抽的随机串，标记里带着它，
    学生打印的假标记认不出来。to_kernel：在 Jupyter 内核里经内核的消息通道
    送出答案（批改程序用），否则打印到 sys.stdout（检查器、测试用
    redirect_stdout 接住它）。"""
    return PROBE % {"limit": MAX_ELEMENTS, "dtypes": sorted(DTYPES),
                    "depth": MAX_DEPTH, "marker": _marker(nonce),
                    "names": list(names), "to_kernel": bool(to_kernel)}


def answers_from_output(text: str, nonce: str = "") -> bytes:
    """探针单元的输出里、标记（带 nonce 时是带这个 nonce 的标记）之后的那一行；
    没有标记、标记不止一个（有人冒充探针）或太大时抛 AnswerFileError。"""
    marker = _marker(nonce)
    count = text.count(marker)
    if count == 0:
        raise AnswerFileError("探针没有输出答案")
    if nonce and count > 1:
        raise AnswerFileError(f"探针的标记出现了 {count} 次，应当只有一次")
    at = text.rfind(marker)
    line = text[at + len(marker):].split("\n", 1)[0].encode("utf-8")
    if len(line) > MAX_ANSWER_BYTES:
        raise AnswerFileError(
            f"答案有 {len(line)} 字节，超过上限 {MAX_ANSWER_BYTES} 字节")
    return line


class Missing:
    """运行结束时变量不存在。"""

    def __repr__(self) -> str:
        return "<不存在>"


MISSING = Missing()


def parse_json(data: bytes):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise AnswerFileError("结果文件不是有效的 JSON") from None


def _number(x, kind: str):
    if kind == "bool":
        if type(x) is not bool:
            raise AnswerFileError("布尔张量里有不是 true/false 的值")
        return x
    if kind.startswith(("int", "uint")):
        if type(x) is not int:
            raise AnswerFileError("整数张量里有不是整数的值")
        return x
    if type(x) not in (int, float) or type(x) is bool:
        raise AnswerFileError("浮点张量里有不是数的值")
    return x


def _decode(item, depth: int = 0):
    import torch

    if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
        raise AnswerFileError("答案的格式不对")
    kind = item["kind"]
    if kind == "missing":
        return MISSING
    if kind == "none":
        return None
    if kind == "ellipsis":
        return Ellipsis
    if kind in ("bool", "int", "float", "str"):
        value = item.get("value")
        want = {"bool": bool, "int": int, "float": (int, float), "str": str}[kind]
        if not isinstance(value, want) or (kind != "bool" and type(value) is bool):
            raise AnswerFileError(f"答案的类型标为 {kind}，值却不是")
        too_big = kind == "int" and abs(value) >= 2**63
        if too_big or kind == "str" and len(value) > 200:
            raise AnswerFileError("答案的值超出范围")
        return float(value) if kind == "float" else value
    if kind in ("list", "tuple"):
        items = item.get("items")
        if (not isinstance(items, list) or len(items) > MAX_ELEMENTS
                or depth >= MAX_DEPTH):
            raise AnswerFileError("列表答案的格式不对")
        values = [_decode(x, depth + 1) for x in items]
        # 里面有别的类型：整个列表当作看不懂的值
        if any(isinstance(v, _Opaque) for v in values):
            return _opaque("list", "[…]")
        return values if kind == "list" else tuple(values)
    if kind == "tensor":
        dtype, shape, data = item.get("dtype"), item.get("shape"), item.get("data")
        if (dtype not in DTYPES or not isinstance(shape, list)
                or not isinstance(data, list)):
            raise AnswerFileError("张量答案的格式不对")
        sizes_ok = all(type(s) is int and 0 <= s <= MAX_ELEMENTS for s in shape)
        if len(shape) > 8 or not sizes_ok:
            raise AnswerFileError("张量答案的形状不对")
        if math.prod(shape) != len(data) or len(data) > MAX_ELEMENTS:
            raise AnswerFileError("张量答案的元素个数与形状不符")
        values = [_number(x, dtype) for x in data]
        return torch.tensor(values, dtype=getattr(torch, dtype)).reshape(shape)
    if kind == "opaque":
        name, text = item.get("type"), item.get("repr")
        if (not isinstance(name, str) or not isinstance(text, str)
                or not name.isidentifier()):
            raise AnswerFileError("答案的格式不对")
        return _opaque(name[:40], text[:80])
    raise AnswerFileError(f"答案的类型 {kind[:20]!r} 不认识")


class _Opaque:
    pass


def _opaque(name: str, text: str):
    """别的类型：用一个同名的替身，让检查器说“收到的是 XXX”。"""
    return type(name, (_Opaque,), {"__repr__": lambda self: text})()


def decode_answer(item):
    """核对并还原一个答案变量的值（探针写出的一项）。"""
    return _decode(item)


def decode_answers(raw, names: list[str]) -> dict:
    """核对并还原探针写出的答案：{变量名: 值}（变量不存在时是 MISSING）。"""
    if not isinstance(raw, dict) or set(raw) != set(names):
        raise AnswerFileError("答案文件里的变量与题目不符")
    return {n: _decode(raw[n]) for n in names}


def round_trip(values: dict) -> dict:
    """values 经过探针（写成 JSON 再读回）之后的样子：批改程序判的就是它。
    numpy 数组变成张量，太大的张量和别的对象变成同名的替身……和批改时一模一样。
    探针读不回来时抛 AnswerFileError。"""
    import contextlib
    import io

    names = list(values)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            # 探针就是批改时在学生内核里运行的那段
            exec(probe_source(names), dict(values))  # noqa: S102
    except Exception as err:
        # 探针自己出了错（学生的对象很古怪）：批改时这份提交也会出错
        raise AnswerFileError(type(err).__name__) from None
    return decode_answers(parse_json(answers_from_output(sink.getvalue())), names)
