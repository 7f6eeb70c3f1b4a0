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
# 模块（题目给的 mha、block）最多记这么多个参数和缓冲区
MAX_MODULE_ENTRIES = 64
DTYPES = {"float16", "bfloat16", "float32", "float64",
          "int8", "int16", "int32", "int64", "uint8", "bool"}


class AnswerFileError(Exception):
    """答案文件不合格（不是批改程序自己写出的样子）。"""


MARKER = "MINIGPT-GRADE-ANSWERS:"
# 打印答案的探针（检查器、测试用）可以在标记后面加一个随机数（nonce）：带这个 nonce
# 的行只能有一行。
# 批改程序不靠它：批改用的探针另有标记 KERNEL_MARKER，每一行都带 HMAC 签名（见
# install_kernel_probe）。


def new_nonce() -> str:
    import secrets

    return secrets.token_hex(16)

# 把答案变量写成纯数据（只含数字、字符串、列表和张量的数据）。
# 批改时它在学生的内核里运行：
# make_converter 在预热单元里、学生的代码运行之前调用一次，用到的内置函数、torch
# 的函数和属性都在那时取好
# （学生之后改 builtins、torch.Tensor 的方法、sys.modules["json"] 都碍不着它）；
# 张量在 DisableTorchFunction 之下读（子类的 __torch_function__ 不运行），
# 稀疏等布局先转成普通张量。
# 一个变量读不出来（对象很古怪），只有它成了“看不懂的值”，别的变量照常读。


def make_converter(limit: int = MAX_ELEMENTS, max_depth: int = MAX_DEPTH):
    """返回 convert(namespace, names) -> {变量名: 纯数据}。"""
    import builtins as b

    import torch

    (abs, Exception, len, list, min, repr, str, tuple, type, issubclass, dict) = (
        b.abs, b.Exception, b.len, b.list, b.min, b.repr, b.str, b.tuple, b.type,
        b.issubclass, b.dict)
    base = torch._C.TensorBase
    Tensor, strided = torch.Tensor, torch.strided
    no_torch_function = torch._C.DisableTorchFunction
    detach, as_subclass, to_dense, cpu, reshape, tolist, numel, dim = (
        base.detach, base.as_subclass, base.to_dense, base.cpu, base.reshape,
        base.tolist, base.numel, base.dim)
    get_dtype, get_layout, get_shape, get_device = (
        base.dtype.__get__, base.layout.__get__, base.shape.__get__,
        base.device.__get__)
    from_numpy = torch.from_numpy
    Module, state_dict = torch.nn.Module, torch.nn.Module.state_dict
    ok = frozenset(DTYPES)

    def convert(namespace, names):
        budget = [limit * 4]          # 所有答案合起来最多这么多个元素

        def opaque(v, text):
            return {"kind": "opaque", "type": type(v).__name__[:40], "repr": text}

        def tensor(v):
            with no_torch_function():
                v = detach(v)
                if get_layout(v) != strided:      # 稀疏张量等：先转成普通张量
                    v = to_dense(v)
                v = as_subclass(v, Tensor)
                dtype = str(get_dtype(v)).replace("torch.", "")
                shape = tuple(get_shape(v))
                if get_device(v).type == "meta":
                    return {"kind": "opaque", "type": "Tensor",
                            "repr": "meta 设备上的张量（没有数据）"}
                count = numel(v)
                if dtype not in ok or count > min(limit, budget[0]) or dim(v) > 8:
                    return {"kind": "opaque", "type": "Tensor",
                            "repr": f"tensor(形状 {shape}，{dtype})"}
                budget[0] -= count
                return {"kind": "tensor", "dtype": dtype, "shape": list(shape),
                        "data": tolist(reshape(cpu(v), (-1,)))}

        def conv(v, depth=0):
            budget[0] -= 1
            if budget[0] < 0:
                return opaque(v, "（答案太大，没有取回）")
            if v is None:
                return {"kind": "none"}
            if v is ...:
                return {"kind": "ellipsis"}
            module = type(v).__module__ or ""
            if type(module) is str and module.startswith("numpy"):
                if type(v).__name__ == "ndarray" and v.dtype.kind in "biuf":
                    v = from_numpy(v.copy())
                elif type(v).__name__ != "ndarray" and v.dtype.kind in "biuf":
                    v = v.item()
            if issubclass(type(v), Tensor):
                return tensor(v)
            if issubclass(type(v), Module) and depth == 0:
                # 题目给的 mha、block：记下参数，批改程序才说得出“你改动了题目给的
                # mha”（r36b F4）
                state = {}
                for name, t in state_dict(v).items():
                    if (len(state) >= MAX_MODULE_ENTRIES
                            or not issubclass(type(t), Tensor)):
                        return opaque(v, "（模块太大，没有取回）")
                    state[str(name)[:80]] = tensor(t)
                return {"kind": "module", "type": type(v).__name__[:40],
                        "state": state}
            if type(v) is bool:
                return {"kind": "bool", "value": v}
            if type(v) is int:
                if abs(v) < 2**63:
                    return {"kind": "int", "value": v}
                return {"kind": "opaque", "type": "int", "repr": "（整数太大）"}
            if type(v) is float:
                return {"kind": "float", "value": v}
            if type(v) is str:
                return {"kind": "str", "value": v[:200]}
            if (type(v) in (list, tuple) and depth < max_depth
                    and len(v) <= min(limit, budget[0])):
                items = [conv(x, depth + 1) for x in v]
                return {"kind": type(v).__name__, "items": items}
            try:
                text = repr(v)[:80]
                if type(text) is not str:
                    text = "?"
            except Exception:
                text = "?"
            return opaque(v, text)

        out = {}
        for n in names:
            if n not in namespace:
                out[n] = {"kind": "missing"}
                continue
            v = dict.get(namespace, n)
            try:
                out[n] = conv(v)
            except Exception as err:   # 只有这个变量读不出来
                out[n] = opaque(v, f"（读不出这个值：{type(err).__name__}）")
        return out

    return convert


def make_dumps():
    """写 JSON（和 json.dumps 的默认格式相同）；只用预先取好的 C 函数，学生改 json
    模块碍不着它。"""
    from json.encoder import encode_basestring_ascii as esc
    import builtins as b

    type, float_repr, int_repr, list, tuple, dict, str, TypeError = (
        b.type, b.float.__repr__, b.int.__repr__, b.list, b.tuple, b.dict, b.str,
        b.TypeError)
    inf = b.float("inf")

    def dumps(o):
        t = type(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        if t is str:
            return esc(o)
        if t is int:
            return int_repr(o)
        if t is float:
            if o != o:
                return "NaN"
            if o == inf:
                return "Infinity"
            if o == -inf:
                return "-Infinity"
            return float_repr(o)
        if t is dict:
            pairs = [esc(k) + ": " + dumps(v) for k, v in dict.items(o)]
            return "{" + ", ".join(pairs) + "}"
        if t is list or t is tuple:
            return "[" + ", ".join([dumps(x) for x in o]) + "]"
        raise TypeError(t.__name__)

    return dumps


# 学生的代码里（检查器、测试）用的探针：打印到 sys.stdout（检查器、测试用
# redirect_stdout 接住它）。
# 批改程序不用它，用的是 install_kernel_probe 装好的那个（见下）。
PROBE = r"""
def __minigpt_grade_probe(__names):
    import builtins as __b
    from minigpt.answer_format import make_converter, make_dumps
    __a = make_converter()(__b.globals(), __names)
    text = "\n" + %(marker)r + make_dumps()(__a) + "\n"
    __b.print(text, end="", flush=True)
__minigpt_grade_probe(%(names)r)
del __minigpt_grade_probe
"""


# ---------------------------------------------------------------- 批改用的内核探针
# 批改时，预热单元（学生的代码运行之前）调用 install_kernel_probe：
# 它在内核里抽一把密钥（只交给 runner），
# 把读答案要用的一切（答案所在的字典、上面的转换函数、HMAC、内核送消息的函数）都取好。
# 之后 runner 每次要答案，都发一条 comm_open 消息（目标 PROBE_TARGET）：
# 内核直接调用这里登记的函数，
# 不经过 IPython 的输入转换器、AST 转换器、pre/post_run_cell 和 pre/post_execute
# 事件、displayhook，
# 探针也就不是一段学生的钩子改写得了的代码；消息里只有变量名和一次性的 nonce（防重放）
# ，没有秘密。
# 探针经内核的消息通道送出“标记 + HMAC + JSON”；runner 用密钥核对 HMAC 和 nonce，
# 对不上的一律不算。
# 签名挡住的是学生的代码打印或改写出来的行。
# 它挡不住这样的学生：顺着内核里的对象找到探针，
# 拿它的签名对象给任意答案签名（r36c F2：五六行代码）。
# 探针和学生的代码在同一个进程里；这已经是刻意攻击批改程序本身，
# 就算这样，一道题也要有对的值才得分（见教师指南）。
KERNEL_MARKER = "MINIGPT-GRADE-SIGNED:"
KEY_MARKER = "MINIGPT-GRADE-KEY:"
PROBE_TARGET = "minigpt_grade_probe"


def install_kernel_probe() -> str:
    """在批改用的内核里、学生的代码运行之前调用一次；返回密钥（十六进制），由 runner
    从输出里读走。"""
    import _hashlib
    import secrets
    import sys

    # 只在批改用的 IPython 内核里调用：那里 IPython 早已载入（本书的包不依赖 IPython）
    shell = sys.modules["IPython"].get_ipython()
    kernel = shell.kernel
    key = secrets.token_bytes(32)
    # 探针只留一个算好了密钥的 HMAC 对象（C 实现，读不出密钥），
    # 不留密钥本身：顺着 comm 目标的闭包，
    # 找不到那 32 个字节（r36c F2）。这只是多一道坎，不是保证：
    # 学生的代码和探针在同一个进程里，拿到这个对象照样能签名
    signer = _hashlib.hmac_new(key, digestmod="sha256")
    convert, dumps = make_converter(), make_dumps()
    send, iopub = kernel.session.send, kernel.iopub_socket
    get_parent = kernel.get_parent
    user_ns = shell.user_ns
    settrace, gettrace = sys.settrace, sys.gettrace
    setprofile, getprofile = sys.setprofile, sys.getprofile

    def probe(names, nonce):
        trace, profile = gettrace(), getprofile()
        settrace(None)      # 学生设的跟踪、性能分析函数不在探针运行时插手
        setprofile(None)
        try:
            if shell.user_ns is not user_ns:
                answers = {"tampered": "namespace"}
            elif audit_added[0]:
                answers = {"tampered": "audit"}
            elif trace is not None or profile is not None:
                # 跟踪函数在内核处理探针消息的每一层都会被调用，可能已经改了答案：不读
                answers = {"tampered": "trace"}
            else:
                answers = convert(user_ns, names)
            payload = dumps({"nonce": nonce, "answers": answers})
            one = signer.copy()
            one.update(payload.encode("utf-8"))
            mac = one.hexdigest()
            line = "\n" + KERNEL_MARKER + mac + ":" + payload + "\n"
            send(iopub, "stream", {"name": "stdout", "text": line},
                 get_parent("shell"))
        finally:
            settrace(trace)
            setprofile(profile)

    comms = kernel.comm_manager.comms
    # 审计钩子（sys.addaudithook）去不掉，也列不出来；它们在探针路上的审计事件里运行，
    # 可能改答案。
    # 这个钩子装在学生的代码之前：之后谁再装审计钩子，
    # 它都先看到（“sys.addaudithook”本身是审计事件）
    audit_added = [False]

    def watch(event, args):
        if event == "sys.addaudithook":
            audit_added[0] = True

    sys.addaudithook(watch)
    list_, str_ = list, str

    def on_open(comm, msg):
        comms.pop(comm.comm_id, None)
        data = msg["content"]["data"]
        probe([str_(n) for n in list_(data["names"])], str_(data["nonce"]))

    kernel.comm_manager.register_target(PROBE_TARGET, on_open)
    text = key.hex()
    del key
    return text


def probe_request(names: list[str], nonce: str) -> tuple[str, dict]:
    """runner 发给内核、让探针运行一次的消息的 (msg_type, content)。"""
    return "comm_open", {"comm_id": new_nonce(), "target_name": PROBE_TARGET,
                         "data": {"names": list(names), "nonce": nonce}}


def signed_answers(text: str, key: str, nonce: str) -> bytes:
    """内核探针输出里、HMAC 对得上、nonce 是这一次的那一行 JSON（answers 部分）。"""
    import hashlib
    import hmac

    if KERNEL_MARKER not in text:
        raise AnswerFileError("探针没有输出答案")
    for piece in text.split(KERNEL_MARKER)[1:]:
        line = piece.split("\n", 1)[0]
        mac, _, payload = line.partition(":")
        data = payload.encode("utf-8")
        if len(data) > MAX_ANSWER_BYTES + 200:
            continue
        want = hmac.new(bytes.fromhex(key), data, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, want):
            continue
        raw = parse_json(data)
        if not isinstance(raw, dict) or raw.get("nonce") != nonce:
            continue
        answers = raw.get("answers")
        if isinstance(answers, dict) and answers.get("tampered") == "namespace":
            raise AnswerFileError("学生的代码换掉了内核里的变量字典")
        if isinstance(answers, dict) and answers.get("tampered") == "audit":
            raise AnswerFileError("学生的代码装了审计钩子（sys.addaudithook），"
                                  "答案可能被它改动过")
        if isinstance(answers, dict) and answers.get("tampered") == "trace":
            raise AnswerFileError("学生的代码设了跟踪函数"
                                  "（sys.settrace 或 sys.setprofile），"
                                  "答案可能被它改动过")
        return json.dumps(answers).encode("utf-8")
    raise AnswerFileError("探针的输出没有通过核验（被改动过）")


def _marker(nonce: str) -> str:
    return f"{MARKER}{nonce}:" if nonce else MARKER


def probe_source(names: list[str], nonce: str = "") -> str:
    """打印答案的探针的源代码（检查器、测试用；批改程序用 install_kernel_probe）。
    nonce：标记里带着它。"""
    return PROBE % {"marker": _marker(nonce), "names": list(names)}


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


# 整数张量每种 dtype 能装下的范围：签名对得上的答案里也可能有
# 装不下的数（学生挖出密钥自己签的，r36c F1）
_INT_RANGE = {"uint8": (0, 2**8 - 1), "int8": (-2**7, 2**7 - 1),
              "int16": (-2**15, 2**15 - 1), "int32": (-2**31, 2**31 - 1),
              "int64": (-2**63, 2**63 - 1)}


def _number(x, kind: str):
    if kind == "bool":
        if type(x) is not bool:
            raise AnswerFileError("布尔张量里有不是 true/false 的值")
        return x
    if kind.startswith(("int", "uint")):
        if type(x) is not int:
            raise AnswerFileError("整数张量里有不是整数的值")
        low, high = _INT_RANGE[kind]
        if not low <= x <= high:
            raise AnswerFileError("答案的值超出范围")
        return x
    if type(x) not in (int, float) or type(x) is bool:
        raise AnswerFileError("浮点张量里有不是数的值")
    if type(x) is int and abs(x) >= 2**1000:   # float() 装不下（10**400）
        raise AnswerFileError("答案的值超出范围")
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
        too_big = (kind == "int" and abs(value) >= 2**63
                   or kind == "float" and type(value) is int
                   and abs(value) >= 2**1000)
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
    if kind == "module":
        name, state = item.get("type"), item.get("state")
        if (not isinstance(name, str) or not name.isidentifier()
                or not isinstance(state, dict)
                or len(state) > MAX_MODULE_ENTRIES or depth > 0):
            raise AnswerFileError("答案的格式不对")
        tensors = {}
        for key, value in state.items():
            decoded = _decode(value, depth + 1)
            if (not isinstance(key, str)
                    or not isinstance(decoded, (torch.Tensor, _Opaque))):
                raise AnswerFileError("答案的格式不对")
            tensors[key[:80]] = decoded
        return _module(name[:40], tensors)
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


def _module(name: str, state: dict):
    """一个模块（nn.Module）的替身：检查器说“收到的是 XXX”，state_dict()
    给出探针记下的参数，
    用来和题目给的 mha、block 比（homework.checker._same）。"""
    return type(name, (_Opaque,), {"__repr__": lambda self: f"{name}(…)",
                                   "state_dict": lambda self: dict(state)})()


def _checked(item):
    """_decode，但还原时出的任何错（上面没有想到的，例如 torch 不肯造的张量）
    都成了 AnswerFileError：一份提交交回的答案再古怪，也只让这一份记
    “答案输出被改动过”，不让整批批改停下（r36c F1）。"""
    try:
        return _decode(item)
    except AnswerFileError:
        raise
    except Exception as err:
        raise AnswerFileError(f"答案的值还原不了（{type(err).__name__}）") from None


def decode_answer(item):
    """核对并还原一个答案变量的值（探针写出的一项）；
    不合格时抛 AnswerFileError，不抛别的异常。"""
    return _checked(item)


def decode_answers(raw, names: list[str]) -> dict:
    """核对并还原探针写出的答案：{变量名: 值}（变量不存在时是 MISSING）；
    不合格时抛 AnswerFileError，不抛别的异常。"""
    if not isinstance(raw, dict) or set(raw) != set(names):
        raise AnswerFileError("答案文件里的变量与题目不符")
    return {n: _checked(raw[n]) for n in names}


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
