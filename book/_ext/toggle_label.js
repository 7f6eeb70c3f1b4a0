// sphinx-togglebutton 0.3 的折叠按钮把 aria-label="Toggle hidden content" 写死在它的 JS 里（没有配置项，
// 也不走任何翻译目录）。它在 DOMContentLoaded 时生成按钮；本脚本在它之后登记，按钮生成后把标签换成中文。
// 由 book/_ext/book_html_fixes.py 加到每一页上。
document.addEventListener("DOMContentLoaded", () => {
  for (const button of document.querySelectorAll('button.toggle-button[aria-label="Toggle hidden content"]')) {
    button.setAttribute("aria-label", "显示或隐藏折叠的内容");
  }
});
