"""作业包：网站上可下载的 ``minigpt-homework.zip``（Sphinx 扩展，在 _config.yml 的 local_extensions 里登记）。

HTML 构建结束时（``build-finished``）在网站根目录写出作业包，里面是：

- ``homework_student.ipynb``：不含答案的作业笔记本（tools/make_student_notebook.py 从作业页生成）；
- ``minigpt_book-<版本>-py3-none-any.whl``：本书的 Python 包（发行名 minigpt-book，import 名 minigpt），
  构建时用当前环境的 setuptools 现场打包（``pip wheel --no-build-isolation --no-index``，不联网）。
  文件名不写死：版本只在 ``minigpt.__version__`` 一处，打出来的是哪个 wheel 就用哪个；
- ``README.md``：中文的安装与使用说明。

作业包按包源码、pyproject.toml、笔记本和说明文字求摘要，缓存在 ``_build/.homework-bundle/``：这些都没变时
直接复制缓存，不再打包。另外给每页的下载菜单加一项“作业包”。目录里没有作业页的书（测试用的小书）什么都不做。
打包失败发警告，构建（带 -W）因而失败。

wheel 每次构建只打一次（``site_wheel``）：作业包与读者笔记本包（book_notebooks）用的是同一个，按包源码和
打包文件的摘要缓存在 ``_build/.reader-wheel/``。缓存里没有时，HTML 构建一开始（``builder-inited``）就在
后台线程里打包：pip 是子进程，Sphinx 读写页面只用一个 CPU，打包在另一个 CPU 上同时完成，到构建结束用到它时
已经打好。
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

BUNDLE = "minigpt-homework.zip"        # 网站根目录下的文件名（作业页的链接指向它）
FOLDER = "minigpt-homework"            # 解压出来的文件夹
HOMEWORK_DOC = "book/homework"
NOTEBOOK = Path("book") / "homework_student.ipynb"

README = """\
# 作业包：《Attention 机制与 Transformer Block》

这个文件夹里有：

- `homework_student.ipynb`：作业笔记本，不含答案；
- `{wheel}`：本书的 Python 包（pip 里叫 minigpt-book，代码里 `import minigpt`；版本 {version}），检查器就在里面；
- `README.md`：这份说明。

## 开始做题

需要 Python 3.11 或更新的版本。在这个文件夹里打开终端，按你的系统运行下面四行：建一个虚拟环境、
进入它、装只用 CPU 的 PyTorch、再装本书的包。

作业只用 CPU，用不到显卡。PyTorch 要先装、而且要装 CPU 版：在 Linux 上直接装本书的包，pip 会从 PyPI
拉来带 CUDA 库（给 NVIDIA 显卡用）的 PyTorch，一个虚拟环境就有五六个 GB；照下面做，整个环境约 1 GB。
装本书的包时，pip 看到 PyTorch 已经装好，不会再换一个；它另外装上 numpy 和 matplotlib。

### Linux

```bash
python3 -m venv minigpt-env
source minigpt-env/bin/activate
pip install "torch=={torch}" --index-url https://download.pytorch.org/whl/cpu
pip install {wheel}
```

连不上 PyTorch 的下载网站时（例如只能用 PyPI 的镜像），第三行换成 `pip install` 加一个事先下载好的
PyTorch {torch} CPU 版 wheel 的文件名（例如 `torch-{torch}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl`，
cp311 要和你的 Python 版本对得上）：哪一个 torch {torch} 的 CPU 版 wheel 都可以。第四行仍要从 PyPI
（或镜像）取 numpy 和 matplotlib。

### macOS

PyPI 上给 macOS 的 PyTorch 本来就只有 CPU 版（在 Apple 芯片上还能用 MPS），直接装：

```bash
python3 -m venv minigpt-env
source minigpt-env/bin/activate
pip install "torch=={torch}"
pip install {wheel}
```

第三行也可以换成 `pip install` 加一个事先从 PyPI 下载好的 torch {torch} wheel 的文件名
（要和你的 Python 版本、芯片对得上）。

### Windows

在“命令提示符”（cmd）里：

```bat
py -m venv minigpt-env
minigpt-env\\Scripts\\activate.bat
pip install "torch=={torch}" --index-url https://download.pytorch.org/whl/cpu
pip install {wheel}
```

连不上 PyTorch 的下载网站时，第三行换成 `pip install` 加一个事先下载好的 PyTorch {torch} CPU 版 wheel 的
文件名（例如 `torch-{torch}+cpu-cp311-cp311-win_amd64.whl`）：哪一个 torch {torch} 的 CPU 版 wheel 都可以。
在 PowerShell 里，第二行换成 `minigpt-env\\Scripts\\Activate.ps1`。wheel 的文件名要写全：cmd 和 PowerShell
不会替 pip 展开 `*`。

### 打开笔记本

用 Jupyter 打开 `homework_student.ipynb`（还没有 Jupyter：在同一个虚拟环境里 `pip install notebook`，
再运行 `jupyter notebook`），从上往下逐个运行。带 `# TODO` 的单元里有 `None` 占位，换成你的代码；
单元最后一行的检查器会告诉你对不对。以后再做题，先进入虚拟环境（上面的第二行），再启动 Jupyter。

## 交作业

做完后在 Jupyter 里“重启内核并运行全部”一次，保存，把 `homework_student.ipynb` 交给老师
（老师可能会请你先把它改名为学号）。批改看的是运行结束时每个答案变量的值。
"""


# 打包时除 src/ 之外要带上的文件（pyproject.toml 的 license-files 指向 LICENSE）
PACKAGING_FILES = ("pyproject.toml", "LICENSE")


def _source_files(root: Path) -> list[Path]:
    package = sorted(p for p in (root / "src" / "minigpt").rglob("*.py"))
    return [*(root / name for name in PACKAGING_FILES), root / NOTEBOOK, *package]


def bundle_key(root: Path) -> str:
    """包源码、pyproject.toml、学生版笔记本与说明文字的摘要；任何一个字节变了，作业包就重新打。"""
    digest = hashlib.sha256(README.encode())
    for path in _source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_wheel(root: Path, out_dir: Path, python: str = sys.executable) -> Path:
    """用 python 所在环境的 setuptools 把 root 下的 minigpt（发行名见 pyproject.toml）打成 wheel，不联网；
    返回 wheel 的路径。out_dir 里应当只有这一个 wheel（文件名随发行名与版本而定，这里不写死）。

    在临时副本里打包，免得在源码树里留下 build/ 和 *.egg-info。
    """
    with tempfile.TemporaryDirectory(prefix="minigpt-wheel-") as tmp:
        copy = Path(tmp) / "src-copy"
        shutil.copytree(root / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in PACKAGING_FILES:
            shutil.copy(root / name, copy / name)
        env = dict(os.environ, SOURCE_DATE_EPOCH=os.environ.get("SOURCE_DATE_EPOCH", "1767225600"),
                   PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        proc = subprocess.run(
            [python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
             "--wheel-dir", str(out_dir), str(copy)],
            env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"打包 minigpt 失败（pip wheel 退出码 {proc.returncode}）：\n{proc.stdout}{proc.stderr}")
    wheels = sorted(out_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"pip wheel 之后 {out_dir} 里应当正好有一个 wheel，找到 {[w.name for w in wheels]}")
    return wheels[0]


def zip_write(zf: zipfile.ZipFile, name: str, data: bytes, folder: str = FOLDER) -> None:
    """把 data 写进 zip 的 folder/name。固定时间戳（SOURCE_DATE_EPOCH，默认 2026-01-01）与权限，
    内容不变时 zip 逐字节相同（作业包与笔记本包都用它）。"""
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "1767225600")))[:6]
    info = zipfile.ZipInfo(f"{folder}/{name}", date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    zf.writestr(info, data)


WHEEL_CACHE = ".reader-wheel"  # _build/ 下，子目录名是 wheel_key


def wheel_key(root: Path) -> str:
    """wheel 的输入（打包文件与 src/minigpt 的全部 .py）的摘要：任何一个字节变了，wheel 就重新打。"""
    digest = hashlib.sha256()
    for path in [*(root / n for n in PACKAGING_FILES), *sorted((root / "src" / "minigpt").rglob("*.py"))]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cached_wheel(root: Path, build_dir: Path) -> Path:
    """build_dir/.reader-wheel/<wheel_key>/ 里的 wheel；没有就现在打（旧版本的缓存一并删掉）。"""
    cache = build_dir / WHEEL_CACHE / wheel_key(root)
    wheels = sorted(cache.glob("*.whl")) if cache.is_dir() else []
    if len(wheels) == 1:
        return wheels[0]
    if cache.parent.is_dir():
        shutil.rmtree(cache.parent)
    partial = cache.with_name(cache.name + ".part")
    partial.mkdir(parents=True)
    build_wheel(root, partial)
    partial.replace(cache)  # 打完才换上：打断的构建不会留下一个半成品当缓存
    return sorted(cache.glob("*.whl"))[0]


def _has_package(app) -> bool:
    return (Path(app.confdir) / "src" / "minigpt").is_dir()


def start_wheel(app) -> None:
    """builder-inited：HTML 构建且缓存里没有 wheel 时，在后台线程里开始打包（见本模块说明）。"""
    if app.builder.format != "html" or not _has_package(app):
        return
    root, build_dir = Path(app.confdir), Path(app.outdir).parent
    if (build_dir / WHEEL_CACHE / wheel_key(root)).is_dir():
        return

    def job() -> None:
        try:
            cached_wheel(root, build_dir)
        except Exception:  # noqa: BLE001  失败时 site_wheel 再打一次，错误在那里照常报告
            pass

    app._book_wheel_job = threading.Thread(target=job, name="minigpt-wheel", daemon=True)
    app._book_wheel_job.start()


def site_wheel(app) -> Path | None:
    """本书的 wheel（作业包和读者笔记本包共用）；书里没有 src/minigpt 时返回 None。打包失败抛出 RuntimeError。"""
    if not _has_package(app):
        return None
    wait_for_wheel(app)
    return cached_wheel(Path(app.confdir), Path(app.outdir).parent)


def wait_for_wheel(app) -> None:
    """等后台的打包线程（start_wheel）结束；没有在打包时立即返回。"""
    job = getattr(app, "_book_wheel_job", None)
    if job is not None:
        job.join()
        app._book_wheel_job = None


def torch_pin(root: Path) -> str:
    """requirements.lock 里 torch 的版本（autograder_bundle.torch_pin：Gradescope 的 setup.sh 装的也是它）。"""
    import importlib.util

    spec = importlib.util.spec_from_file_location("autograder_bundle",
                                                  Path(__file__).with_name("autograder_bundle.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.torch_pin(root)


def build_bundle(root: Path, target: Path, python: str = sys.executable, wheel: Path | None = None) -> Path:
    """在 target 写出作业包（zip）。root 是书的根目录（有 src/minigpt、pyproject.toml、book/）。
    wheel 是已经打好的本书 wheel（构建里用 site_wheel 的那一个）；不给时现场打一个。"""
    with tempfile.TemporaryDirectory(prefix="minigpt-bundle-") as tmp:
        wheel = wheel or build_wheel(root, Path(tmp), python)
        version = wheel.name.split("-")[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".zip.part")
        with zipfile.ZipFile(partial, "w") as zf:
            readme = README.format(wheel=wheel.name, version=version, torch=torch_pin(root))
            zip_write(zf, "README.md", readme.encode())
            zip_write(zf, "homework_student.ipynb", (root / NOTEBOOK).read_bytes())
            zip_write(zf, wheel.name, wheel.read_bytes())
        partial.replace(target)
    return target


def write_bundle(app, exception) -> None:
    """build-finished：HTML 构建成功、且书里有作业页时，把作业包放到网站根目录（内容没变时用缓存）。
    构建失败或没有作业页时也等后台打包结束：它的 pip 子进程不能比 Sphinx 活得久。"""
    if exception is not None or app.builder.format != "html" or HOMEWORK_DOC not in app.env.found_docs:
        wait_for_wheel(app)
        return
    from sphinx.util import logging

    root = Path(app.confdir)
    cached = Path(app.outdir).parent / ".homework-bundle" / f"{bundle_key(root)}.zip"
    try:
        if not cached.is_file():
            for old in cached.parent.glob("*.zip"):
                old.unlink()
            build_bundle(root, cached, wheel=site_wheel(app))
        shutil.copy2(cached, Path(app.outdir) / BUNDLE)
    except (OSError, RuntimeError) as err:
        logging.getLogger(__name__).warning(f"[homework_bundle] 没能生成作业包 {BUNDLE}：{err}")


def offer_bundle(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """在下载菜单（主题在优先级 501 生成）里加一项“作业包”。"""
    from book_downloads import download_menu   # 同目录的本地扩展（Sphinx 已把 book/_ext 放进 sys.path）

    buttons = download_menu(context)
    if buttons is None or HOMEWORK_DOC not in app.env.found_docs:
        return
    buttons.append({
        "type": "link",
        "url": context["pathto"](BUNDLE, 1),
        "text": "作业包",
        "tooltip": "下载作业包：作业笔记本 + minigpt 包 + 说明",
        "icon": "fas fa-file-zipper",
        "label": "download-homework-bundle-button",
    })


def setup(app) -> dict:
    app.connect("html-page-context", offer_bundle, priority=503)
    app.connect("builder-inited", start_wheel)
    app.connect("build-finished", write_bundle)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
