# 《Attention 机制与 Transformer Block》的两条命令：make html、make test。
# 其余：make unit、make serve、make pdf、make screenshots、make dist、make bench、make lighthouse、make lock、make clean。
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.lock-installed

.PHONY: html test unit serve pdf screenshots dist bench lighthouse lock clean setup translations

# 建虚拟环境并按锁 requirements.lock 安装（锁里的包一个不多一个不少），再可编辑安装 minigpt；
# 只在锁、requirements.txt 或 pyproject.toml 变了之后才重新安装（requirements.txt 改了而锁没刷新时停下，提示 make lock）
$(STAMP): requirements.lock requirements.txt pyproject.toml
	$(PYTHON) tools/lock.py install --venv $(VENV)
	@touch $@

# Node 包（package.json，版本锁在 package-lock.json）：构建网站时排公式的 KaTeX。npm ci 按锁安装，只在锁变了之后重装；
# make bench 的 Lighthouse 是开发依赖，只有 make lighthouse / make bench 才装（NPM_ALL）
NPM_HTML := node_modules/.html-installed
NPM_ALL  := node_modules/.all-installed
$(NPM_HTML): package.json package-lock.json
	@tools/system_deps.sh install node
	npm ci --omit=dev --no-audit --no-fund
	@touch $@

$(NPM_ALL): package.json package-lock.json
	@tools/system_deps.sh install node
	npm ci --no-audit --no-fund
	@touch $@ $(NPM_HTML)

setup: $(STAMP) $(NPM_HTML)
	@tools/system_deps.sh install html

# 构建网站到 _build/html（警告即失败；包或依赖一变就重跑所有页面）：中文版在根目录，英文版在 en/
# （英文版由 tools/i18n.py 从中文源文件和 locale/en 的译文生成，见 README 的“英文版”）。
# 网站上的“下载 PDF”也是网站的一部分：装了 TeX 就先构建两种语言的 PDF，和学生版的两种 PDF（没有改动时只需几秒），
# 否则提示一句。然后是两种语言的学生版网站（不带参考答案；页面的执行结果取自刚建好的书，不再运行）：它只在自己的
# PDF 已经建好时才在下载菜单和首页链接 PDF（tools/build_book.py），没有 TeX 时就不给这个链接。最后打成 zip 放在
# 网站根目录，教师指南链接它（装了 TeX 时 zip 里有两种语言的学生版 PDF）。
html: setup
	$(PY) tools/build_book.py --builder html
	$(PY) tools/build_book.py --builder html --lang en
	@if tools/system_deps.sh check pdf 2>/dev/null; then \
	  $(PY) tools/build_book.py --builder pdflatex && \
	  $(PY) tools/build_book.py --builder pdflatex --lang en && \
	  $(PY) tools/build_book.py --builder pdflatex --student && \
	  $(PY) tools/build_book.py --builder pdflatex --lang en --student; \
	else \
	  echo "提示：没有装构建 PDF 的 TeX，网站上的“下载 PDF”链接暂时无效，学生版网站不提供 PDF；按 make pdf 的提示装好后再运行 make html。"; \
	fi
	$(PY) tools/build_book.py --builder html --student --out _build/student
	$(PY) tools/build_book.py --builder html --lang en --student
	$(PY) tools/dist.py --publish-student-site

# 全部测试（TEST_WORKERS 个工作进程，默认 2；同一组的测试在同一个进程里依次运行，见 tests/support/scheduler.py）：单元测试、失败样例书、过期输出测试，以及从全新 Sphinx 环境构建整本书
# 测试还要构建 PDF、驱动浏览器、在沙箱里批改作业、检查 HTML：以 root 运行时缺的 Debian 包（TeX、中文字体、chromium、bubblewrap、Java）会被装上，
# 否则停下来并列出要装的包
TEST_WORKERS ?= 2
test: setup
	@tools/system_deps.sh install pdf
	@tools/system_deps.sh install browser
	@tools/system_deps.sh install grade
	@tools/system_deps.sh install validate
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadscope --durations=25

# 编辑—测试循环用的快速测试：不构建书、不启动内核、不建虚拟环境的那部分（一分钟以内）
unit: setup
	$(PY) -m pytest -m "not book and not kernel and not slow" -q

# 本地预览：http://127.0.0.1:8000/ 。页面或 src/minigpt 一改就经由 tools/build_book.py 重建（过期缓存照样失效），
# 浏览器自动刷新。PORT=0 让系统挑一个空闲端口
PORT ?= 8000
serve: setup
	$(PY) tools/serve.py --port $(PORT)

# PDF（XeLaTeX），输出到 _build/latex/book.pdf，并复制到网站 _build/html/attention-transformer-block.pdf
# （缺 TeX 或中文字体时列出要装的 Debian 包并停下）
pdf: setup
	@tools/system_deps.sh check pdf
	$(PY) tools/build_book.py --builder pdflatex
	$(PY) tools/build_book.py --builder pdflatex --lang en
	@echo "PDF: _build/latex/book.pdf（英文版：_build/en/_build/latex/book.pdf）"

# 英文版的译文：从中文源文件重新提取消息，更新 locale/en/LC_MESSAGES/ 下的目录（新消息空着，改过的中文
# 把旧译文标为 fuzzy），再列出还要翻译或核对的消息。改了中文之后运行它，译好再提交；make test 在有
# 没译的、fuzzy 的或与原文不符的译文时失败
translations: setup
	$(PY) tools/i18n.py update
	$(PY) tools/i18n.py check

# 截图，给人看网站长什么样（不是检查，make test 不截）：构建网站，再跑浏览器测试，把每页浅色、深色的整页截图
# 和交互图的截图存到 _build/screenshots/
screenshots: html
	@tools/system_deps.sh install browser
	BOOK_PREBUILT=. BOOK_SCREENSHOTS=1 $(PY) -m pytest -p no:cacheprovider -q tests/test_browser.py tests/test_interactive_browser.py
	@echo "截图: _build/screenshots/"

# 发布一版：从一次干净的构建（_build/dist-build/，不复用执行缓存）做出 dist/ 里的全部文件——离线网站 zip、PDF、
# 全书笔记本 zip、作业包、Gradescope 自动批改程序 zip（两种语言各一个）、wheel、sdist 和 SHA256SUMS，另有
# 不带参考答案的学生版网站 zip（两种语言，见 tools/dist.py）。需要 TeX（同 make pdf）
dist: setup
	@tools/system_deps.sh check pdf
	$(PY) tools/dist.py

# 基准（不是测试）：冷构建、空操作重建，以及从保存到页面写到磁盘上的时间（改一段文字、改一个代码单元）
# 最后是读者那一端（make lighthouse，测 make html 建好的网站）；它没达到目标时以 1 退出，所以放在最后
bench: html $(NPM_ALL)
	@tools/system_deps.sh install browser
	$(PY) tools/bench.py
	$(PY) tools/bench_grade.py
	$(PY) tools/lighthouse.py

# 读者那一端（不是测试）：在本机用 gzip 提供已构建的网站（make html），以 Lighthouse（npm，移动端配置，Debian 的
# chromium）测首页、公式最多的一页（§2）、§7 和一页英文版，打印四项得分与每页传输的文件。目标：性能 ≥ 95、
# 无障碍 100、最佳实践 ≥ 95、SEO ≥ 95。机器忙时性能分偏低：报告时写明负载
lighthouse: html $(NPM_ALL)
	@tools/system_deps.sh install browser
	$(PY) tools/lighthouse.py

# 刷新锁：在全新的虚拟环境里按 requirements.txt 解析，写出 requirements.lock（改了 requirements.txt 之后运行）
lock:
	$(PYTHON) tools/lock.py

clean:
	rm -rf _build dist
